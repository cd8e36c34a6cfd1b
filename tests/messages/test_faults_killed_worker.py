"""Fault campaign: a worker killed (`kill -9`) in the middle of sending emails to a slow SMTP server.

The killed worker's messages are leased for under a minute (renewed while it lived), so another worker sends
them once the lease lapses: every email is sent within 90 s of the kill, and at most one is sent twice (the
one the server may have accepted just before the kill, before the worker could record it). Message-IDs are
counted at the server.
"""
from __future__ import annotations

import os
import signal
import time
from collections import Counter

import pytest

from tests.messages.conftest import all_messages, send_decisions
from tests.messages.test_faults_smtp_outage import message_ids, processes, timed_smtp, worker_environment  # noqa: F401
from tests.messages.test_outbox import _setup
from tests.webhooks.conftest import wait_until

# Minutes of waiting on an outage or a clock: scheduled first, so parallel test workers finish together.
pytestmark = pytest.mark.long_running

EMAILS = 40
SLOW_DATA_SECONDS = 0.2  # the server keeps each email, then answers DATA this much later
KILL_AFTER = 10  # emails received before the kill
ALL_SENT_WITHIN_SECONDS = 90


def test_a_worker_killed_mid_batch_delays_emails_under_90_s_and_repeats_at_most_one(
        app, factory, database_url, tmp_path, redis_client, processes):  # noqa: F811
    redis_client.flushdb()
    smtp = timed_smtp(delay_seconds=SLOW_DATA_SECONDS).start()
    try:
        environment = worker_environment(app, database_url, tmp_path, smtp)
        first = processes.worker(environment, name="first-worker")
        _, key, applications = _setup(factory, applications=EMAILS)
        assert send_decisions(app.test_client(), key, [a.id for a in applications]).status_code == 200

        assert wait_until(lambda: len(smtp.received) >= KILL_AFTER, 60), "the first worker sent nothing"
        os.killpg(first.pid, signal.SIGKILL)
        killed = time.monotonic()
        first.wait(timeout=30)
        processes.worker(environment, name="second-worker")

        assert wait_until(lambda: {m.status for m in all_messages(app)} == {"sent"}, ALL_SENT_WITHIN_SECONDS + 30), \
            Counter(m.status for m in all_messages(app))
        time.sleep(2)  # a late repeat would arrive now
        written = {m.message_id_header for m in all_messages(app)}
        received = Counter(message_ids(smtp))
        repeats = sum(count - 1 for count in received.values())
        all_sent_after = max(smtp.recorder.arrivals) - killed
        print(f"\nkill -9 after {KILL_AFTER} of {EMAILS} emails: all sent {all_sent_after:.1f} s after the kill, "
              f"{repeats} repeated")
        assert set(received) == written, "an email was lost"
        assert repeats <= 1, f"{repeats} emails were sent twice"
        assert all_sent_after < ALL_SENT_WITHIN_SECONDS
        assert {m.status for m in all_messages(app)} == {"sent"}
    finally:
        smtp.stop()
