"""A receiver that refuses connections is down for every delivery of its endpoint: the endpoint's circuit opens,
the deliveries wait for the next probe (15–30 s) with their attempts untouched, and all go once it answers."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from core.db import db
from core.models.webhooks import WebhookAttempt, WebhookEndpoint
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES
from core.webhooks.sweep import sweep_due_deliveries
from tests.operations.processes import free_port
from tests.webhooks.conftest import RECEIVER_HOST, run_worker
from tests.webhooks.test_webhook_engine import configure, deliveries, emit


def attempts_recorded(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(WebhookAttempt))


def endpoint_of(app, institution) -> WebhookEndpoint:
    with app.app_context():
        endpoint = db.session.scalars(select(WebhookEndpoint)
                                      .where(WebhookEndpoint.institution_id == institution.id)).one()
        db.session.expunge(endpoint)
        return endpoint


def test_a_receiver_refusing_connections_uses_no_retries_and_gets_the_backlog_at_once_when_back(
        engine, factory, receiver, clock):
    institution = factory.institution()
    configure(engine, institution, receiver, url=f"https://{RECEIVER_HOST}:{free_port()}/hooks")  # nothing listens
    events = [emit(engine, "webhook.test", institution) for _ in range(3)]
    run_worker(engine)

    waiting = deliveries(engine, institution)
    assert {(d.status, d.attempts, d.last_error_class) for d in waiting} == {("retry_scheduled", 0, "connection")}
    assert all(15 <= (d.next_attempt_at - d.updated_at).total_seconds() <= 30 for d in waiting)
    assert attempts_recorded(engine) == 0

    # down for longer than the disable threshold's worth of attempts: the probes count against nothing
    for _ in range(DISABLE_AFTER_CONSECUTIVE_FAILURES + 2):
        clock.move_to(max(d.next_attempt_at for d in deliveries(engine, institution)))
        with engine.app_context():
            assert sweep_due_deliveries() == 3
        run_worker(engine)
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (True, 0)
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("retry_scheduled", 0)}

    configure(engine, institution, receiver)  # the receiver answers again (at its new address)
    clock.advance(timedelta(seconds=30))
    with engine.app_context():
        assert sweep_due_deliveries() == 3
    run_worker(engine)
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("delivered", 1)}
    assert sorted(r.headers["X-Karibu-Event-Id"] for r in receiver.server.requests) == sorted(events)
    assert attempts_recorded(engine) == 3
