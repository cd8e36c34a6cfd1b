"""Redis faults: a flush, every worker killed, Redis down. Due deliveries are still attempted soon after a
worker runs again, because every worker sweeps at each maintenance pass (here every 2 s instead of 30 s,
to keep the tests short) and an idle worker waits for jobs no longer than that.

Each test runs real `flask worker` processes against its own redis-server on a free port."""
from __future__ import annotations

import os
import signal
from datetime import timedelta

from sqlalchemy import update

from core.db import db
from core.models.webhooks import WebhookDelivery
from core.outbox.schedule import SystemClock
from tests.webhooks.conftest import wait_until
from tests.webhooks.test_webhook_engine import configure, deliveries, delivery_for, emit
from tests.webhooks.test_webhook_recovery import start_worker

FAST = {"WORKER_MAINTENANCE_SECONDS": "2", "WEBHOOK_SWEEP_SECONDS": "1"}
# Generous bounds: these tests prove that recovery happens by itself, not how fast.
RECOVERY_BOUND_SECONDS = 90


def statuses(app, institution) -> list[str]:
    return [delivery.status for delivery in deliveries(app, institution)]


def bring_retry_forward(app, delivery_id: str, seconds: float = 2) -> None:
    """Make a retry scheduled a minute ahead come due in `seconds` (the worker runs on the system clock)."""
    with app.app_context():
        db.session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
                           .values(next_attempt_at=SystemClock().now() + timedelta(seconds=seconds)))
        db.session.commit()


def a_retry_waiting(app, institution, receiver) -> str:
    """One delivery whose first attempt failed (HTTP 500), now waiting for its retry; returns its id."""
    receiver.behaviour.status = 500
    emit(app, "webhook.test", institution)
    assert wait_until(lambda: statuses(app, institution) == ["retry_scheduled"], RECOVERY_BOUND_SECONDS)
    receiver.behaviour.status = 200
    return deliveries(app, institution)[0].id


def stop(worker) -> None:
    os.killpg(worker.pid, signal.SIGKILL)  # the worker and its scheduler process
    worker.wait(timeout=30)


def test_a_retry_coming_due_after_a_redis_flush_is_sent(engine, factory, receiver, database_url, own_redis):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        delivery_id = a_retry_waiting(engine, institution, receiver)
        own_redis.flush()  # the sweep chain, the scheduler's locks, the worker's registration: all gone
        bring_retry_forward(engine, delivery_id)
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)
        assert len(receiver.requests) == 2
    finally:
        stop(worker)


def test_after_every_worker_is_killed_a_new_worker_sends_what_is_due(engine, factory, receiver, database_url,
                                                                      own_redis):
    """The killed worker's scheduler lock outlives it by a minute; the new worker must not wait for it."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    first = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        delivery_id = a_retry_waiting(engine, institution, receiver)
    finally:
        stop(first)
    bring_retry_forward(engine, delivery_id)

    second = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)
        assert len(receiver.requests) == 2
    finally:
        stop(second)


def test_events_written_while_redis_is_down_are_delivered_when_it_returns(engine, factory, receiver,
                                                                          database_url, own_redis):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        emit(engine, "webhook.test", institution)
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)

        own_redis.stop()
        event_id = emit(engine, "webhook.test", institution)  # committed; the wake-up call fails
        assert delivery_for(engine, event_id).status == "pending"

        own_redis.start()  # back, empty
        assert wait_until(lambda: delivery_for(engine, event_id).status == "delivered", 60)
        assert receiver.requests[-1].headers["X-Karibu-Event-Id"] == event_id
    finally:
        stop(worker)
