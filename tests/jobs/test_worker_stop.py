"""Stopping a real worker: SIGTERM with a backlog to a slow receiver ends it within 30 s with every lease it did not
start released and every send in flight recorded; a SIGKILL leaves neither its metrics port nor RQ's scheduler behind,
and its deliveries in flight go again within a minute."""
from __future__ import annotations

import os
import signal
import time
from collections import Counter

import pytest
from sqlalchemy import func, select

from core.db import db
from core.models.webhooks import WebhookDelivery
from tests.conftest import TEST_DB
from tests.jobs.worker_processes import (
    alive,
    children_of,
    end,
    holds_socket,
    listening_inode,
    metric,
    start_worker,
    wait_for,
)
from tests.ops.processes import free_port
from tests.webhooks.conftest import (  # noqa: F401
    clock,
    delivering,
    engine,
    own_redis,
    receiver,
    resolver,
)
from tests.webhooks.test_webhook_engine import configure, emit

pytestmark = [pytest.mark.long_running,
              pytest.mark.skipif(TEST_DB != "postgres", reason="real worker processes on PostgreSQL")]

RECEIVER_SECONDS = 5
STOP_BOUND_SECONDS = 30


def counts(app, institution_ids) -> dict:
    with app.app_context():
        rows = db.session.execute(
            select(WebhookDelivery.status, WebhookDelivery.lease_token.is_not(None), func.count())
            .where(WebhookDelivery.institution_id.in_(institution_ids))
            .group_by(WebhookDelivery.status, WebhookDelivery.lease_token.is_not(None))).all()
        db.session.rollback()
    return {(status, leased): count for status, leased, count in rows}


def test_sigterm_with_a_backlog_stops_within_30_s_and_a_fresh_worker_sends_the_rest_once(
        engine, factory, receiver, database_url, tmp_path):  # noqa: F811
    institutions = [factory.institution() for _ in range(4)]  # 4 endpoints: more claimed than 16 senders start
    for institution in institutions:
        configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    events = {emit(engine, "webhook.test", institution) for _ in range(50) for institution in institutions}
    ids = [institution.id for institution in institutions]
    receiver.behaviour.delay_seconds = RECEIVER_SECONDS
    worker = start_worker(engine, receiver.ca_path, database_url, tmp_path / "first.log",
                          "--queues", "webhooks,messages")
    try:
        # two rounds of sends have begun: some in flight, more claimed and queued behind them
        assert wait_for(lambda: len(receiver.requests) > 20, 60), worker.log_path.read_text()[-3000:]
        asked = time.monotonic()
        os.killpg(worker.pid, signal.SIGTERM)  # as systemd does: the whole unit
        in_flight = len(receiver.requests)
        worker.wait(timeout=60)
        took = time.monotonic() - asked
    finally:
        end(worker)
    print(f"\nSIGTERM with a backlog to a {RECEIVER_SECONDS} s receiver: exited after {took:.1f} s")
    assert took <= STOP_BOUND_SECONDS
    # the sends queued behind those in flight were not started (the first in flight end 5 s after they began)
    late = [r for r in receiver.requests if r.received_at > asked + 2]
    assert not late, f"{len(late)} sends started after SIGTERM ({in_flight} were in flight)"
    status = counts(engine, ids)
    assert not any(leased for _, leased in status), f"leases kept after the stop: {status}"
    sent = Counter(r.headers["webhook-id"] for r in receiver.requests)
    assert max(sent.values()) == 1 and status.get(("delivered", False)) == len(sent), \
        f"a send in flight was not recorded before the exit: {status}, {len(sent)} received"

    receiver.behaviour.delay_seconds = 0
    fresh = start_worker(engine, receiver.ca_path, database_url, tmp_path / "fresh.log")
    try:
        assert wait_for(lambda: counts(engine, ids) == {("delivered", False): len(events)}, 90, every=1), \
            counts(engine, ids)
    finally:
        end(fresh)
    sent = Counter(r.headers["webhook-id"] for r in receiver.requests)
    assert set(sent) == events and max(sent.values()) == 1, "a webhook was lost or sent twice"


def test_a_killed_worker_leaves_no_scheduler_nor_port_behind_and_its_deliveries_go_within_a_minute(
        engine, factory, receiver, database_url, tmp_path, own_redis):  # noqa: F811
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    port = free_port()
    settings = {"redis_url": own_redis.url, "WORKER_METRICS_PORT": str(port)}
    worker = start_worker(engine, receiver.ca_path, database_url, tmp_path / "killed.log", **settings)
    try:
        assert wait_for(lambda: metric(port, "karibu_outbox_row_failures_total", {}) is not None
                        or listening_inode(port) is not None, 30)
        assert wait_for(lambda: children_of(worker.pid), 30), "RQ's scheduler did not start"
        [scheduler] = children_of(worker.pid)
        inode = listening_inode(port)
        assert holds_socket(worker.pid, inode)
        assert not holds_socket(scheduler, inode), "RQ's scheduler inherited the metrics port"

        receiver.behaviour.delay_seconds = 20  # in flight when the worker is killed
        event_id = emit(engine, "webhook.test", institution)
        assert wait_for(lambda: len(receiver.requests) == 1, 30)
        os.kill(worker.pid, signal.SIGKILL)  # the worker alone: its scheduler is left to itself
        worker.wait(timeout=30)
        killed = time.monotonic()
        receiver.behaviour.delay_seconds = 0
        assert wait_for(lambda: not alive(scheduler), 15), "RQ's scheduler outlived its worker"
    finally:
        end(worker)

    restarted = start_worker(engine, receiver.ca_path, database_url, tmp_path / "restarted.log", **settings)
    try:
        assert wait_for(lambda: len(receiver.requests) == 2, 70), restarted.log_path.read_text()[-3000:]
        print(f"\nthe killed worker's delivery went again {time.monotonic() - killed:.1f} s after the kill")
        assert time.monotonic() - killed <= 60
        assert [r.headers["webhook-id"] for r in receiver.requests] == [event_id, event_id]
        assert restarted.poll() is None, restarted.log_path.read_text()[-3000:]
        assert listening_inode(port) is not None and holds_socket(restarted.pid, listening_inode(port))
    finally:
        end(restarted)
