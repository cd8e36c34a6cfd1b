"""Fault campaign: the SMTP server is down for two minutes around a running worker (real processes).

Every email written during the outage is sent exactly once after the server returns, within one probe interval
(15–30 s, the production default); none used up its own retries on the outage, and the worker's /metrics shows
the open circuit while the server is down.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import pytest
import requests

from tests.conftest import REDIS_URL
from tests.messages.conftest import all_messages, send_decisions
from tests.messages.smtp_server import Recorder, SmtpServer
from tests.messages.test_outbox import _setup
from tests.ops.processes import Processes, app_environment, free_port
from tests.webhooks.conftest import wait_until

# Minutes of waiting on an outage or a clock: scheduled first, so parallel test workers finish together.
pytestmark = pytest.mark.long_running

OUTAGE_SECONDS = 120
EMAILS = 40
# One probe interval at most (30 s), plus a worker's sweep (10 s) and the sends themselves.
RECOVERY_BOUND_SECONDS = 45


@dataclass
class TimedRecorder(Recorder):
    """Records when each email was accepted (time.monotonic, in the order of `received`); `delay_seconds` makes
    the server slow to answer DATA (it keeps the email, then answers, as a real server queues it first)."""

    arrivals: list[float] = field(default_factory=list)
    delay_seconds: float = 0.0

    async def handle_DATA(self, server, session, envelope):
        if self.delay_seconds:
            await asyncio.sleep(self.delay_seconds)
        answer = await Recorder.handle_DATA(self, server, session, envelope)
        if answer.startswith("250"):
            self.arrivals.append(time.monotonic())
        return answer


def timed_smtp(delay_seconds: float = 0.0) -> SmtpServer:
    server = SmtpServer()
    server.recorder = TimedRecorder(delay_seconds=delay_seconds)
    return server


def message_ids(server: SmtpServer) -> list[str]:
    return [received.message["Message-ID"] for received in server.received]


def worker_environment(app, database_url, tmp_path, smtp: SmtpServer, **extra) -> dict:
    return app_environment(database_url, REDIS_URL, tmp_path, SECRET_KEY=app.config["SECRET_KEY"],
                           MAIL_SERVER="127.0.0.1", MAIL_PORT=str(smtp.port),
                           MAIL_DEFAULT_SENDER="Admissions <admissions@karibu.test>", **extra)


@pytest.fixture
def processes(tmp_path):
    started = Processes(tmp_path)
    yield started
    started.stop_all()


def circuits_open(metrics_port: int) -> float | None:
    try:
        text = requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2).text
    except requests.RequestException:
        return None
    for line in text.splitlines():
        if line.startswith('karibu_outbox_circuits_open{kind="smtp"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_emails_written_during_a_two_minute_smtp_outage_are_each_sent_once_when_it_returns(
        app, factory, database_url, tmp_path, redis_client, processes):
    redis_client.flushdb()
    smtp = timed_smtp()  # its port is known but nothing listens: the server is down
    metrics_port = free_port()
    processes.worker(worker_environment(app, database_url, tmp_path, smtp, WORKER_METRICS_PORT=str(metrics_port)))
    _, key, applications = _setup(factory, applications=EMAILS)
    assert send_decisions(app.test_client(), key, [a.id for a in applications]).status_code == 200

    outage_started = time.monotonic()
    assert wait_until(lambda: circuits_open(metrics_port) == 1.0, 60), "the SMTP circuit never opened"
    time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - outage_started)))
    during = all_messages(app)
    assert {(m.status, m.attempts) for m in during} <= {("queued", 0), ("retry_scheduled", 0)}
    assert all(m.status == "queued" or "SMTP connection" in m.last_error for m in during)

    smtp.start()
    returned = time.monotonic()
    try:
        assert wait_until(lambda: {m.status for m in all_messages(app)} == {"sent"}, 90), \
            {m.status for m in all_messages(app)}
        time.sleep(2)  # a repeat would arrive now
        written = {m.message_id_header for m in all_messages(app)}
        received = message_ids(smtp)
        recovery = max(smtp.recorder.arrivals) - returned
        print(f"\nSMTP outage {OUTAGE_SECONDS} s, {EMAILS} emails: all sent {recovery:.1f} s after the server "
              f"returned; received {len(received)}, distinct {len(set(received))}")
        assert sorted(received) == sorted(written), "an email was lost or sent twice"
        assert {m.attempts for m in all_messages(app)} == {1}, "the outage used the emails' own retries"
        assert recovery < RECOVERY_BOUND_SECONDS
        assert wait_until(lambda: circuits_open(metrics_port) == 0.0, 10)
    finally:
        smtp.stop()
