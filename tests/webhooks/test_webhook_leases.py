"""Webhook leases: 45 s, renewed every fifth of it while the drain works (so a slow attempt is never taken by a
second drain), and a drain holds no lease renewal for rows it did not keep (a disabled endpoint's)."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

from sqlalchemy import text

from core.db import db
from core.outbox.drain import Drain
from core.outbox.leases import count_due
from core.webhooks.delivery import DELIVERIES, LEASE, DeliveryKind, drain_due_deliveries
from core.webhooks.runtime import runtime
from tests.webhooks.test_webhook_engine import configure, deliveries, emit


def test_a_lease_is_renewed_while_its_attempt_is_in_flight(engine, factory, receiver, clock):
    assert LEASE == timedelta(seconds=45)
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.delay_seconds = 4  # the attempt is in flight while the clock moves on
    event_id = emit(engine, "webhook.test", institution)
    results = []

    def drain():
        with engine.app_context():
            results.append(drain_due_deliveries(time_budget=10))

    drainer = threading.Thread(target=drain)
    drainer.start()
    try:
        assert len(receiver.server.wait_for(1, timeout=10)) == 1
        [leased] = deliveries(engine, institution)
        for _ in range(2):  # 60 s in all: more than a lease, each step more than a fifth of it
            clock.advance(timedelta(seconds=30))
            time.sleep(1)  # the drain's next turns (every 0.1 s) renew the lease
            with engine.app_context():
                assert count_due(DELIVERIES) == 0, "the lease of a delivery in flight lapsed: it could go twice"
        [renewed] = deliveries(engine, institution)
        assert renewed.lease_token == leased.lease_token
        assert renewed.lease_expires_at >= clock.now() + LEASE - timedelta(seconds=30)
    finally:
        drainer.join(timeout=30)
    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.attempts, delivery.lease_token) == ("delivered", 1, None)
    assert [r.headers["X-Karibu-Event-Id"] for r in receiver.requests] == [event_id]


def test_a_drain_keeps_no_lease_of_a_disabled_endpoints_delivery(engine, factory, receiver):
    sending, disabled = factory.institution(), factory.institution()
    configure(engine, sending, receiver)
    configure(engine, disabled, receiver)
    receiver.behaviour.delay_seconds = 1
    emit(engine, "webhook.test", sending)
    emit(engine, "webhook.test", disabled)
    with engine.app_context():  # disabled by another process after its delivery was written
        db.session.execute(text("UPDATE webhook_endpoints SET enabled = false WHERE institution_id = :id"),
                           {"id": disabled.id})
        db.session.commit()
        drain = Drain(DeliveryKind(), runtime.senders(), capacity=8)
        drain.run(time_budget=5)
        assert drain.mine == set(), "the drain still renews leases it does not hold"
    assert [d.status for d in deliveries(engine, disabled)] == ["endpoint_disabled"]
    assert [d.status for d in deliveries(engine, sending)] == ["delivered"]


def test_a_stopping_drain_releases_the_deliveries_it_held_back_and_sends_none_of_them(engine, factory, receiver):
    """Near its disable threshold an endpoint gets one attempt at a time, the rest of its share held; asked to stop
    while that attempt is in flight, the drain records it and releases the held ones (another worker takes them at
    once) instead of starting them."""
    institution = factory.institution()
    configure(engine, institution, receiver)
    with engine.app_context():
        db.session.execute(text("UPDATE webhook_endpoints SET consecutive_failures = 19 WHERE institution_id = :id"),
                           {"id": institution.id})
        db.session.commit()
    for _ in range(8):
        emit(engine, "webhook.test", institution)
    receiver.behaviour.delay_seconds = 2
    stop = threading.Event()
    drainer = threading.Thread(target=lambda: _drain_in(engine, stop))
    drainer.start()
    try:
        assert len(receiver.server.wait_for(1, timeout=10)) == 1
        stop.set()
    finally:
        drainer.join(timeout=30)
    assert not drainer.is_alive()
    time.sleep(1)
    assert len(receiver.requests) == 1, "a held delivery was started after the drain was asked to stop"
    states = sorted((d.status, d.attempts, d.lease_token) for d in deliveries(engine, institution))
    assert states == [("delivered", 1, None)] + [("pending", 0, None)] * 7


def _drain_in(app, stop: threading.Event) -> None:
    with app.app_context():
        drain_due_deliveries(stop=stop)
