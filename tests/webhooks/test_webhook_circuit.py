"""A receiver that refuses connections is down for every delivery of its endpoint: the endpoint's circuit opens,
the deliveries wait for the next probe (15–30 s) with their attempts untouched, and all go once it answers.
Each finding (the opening, each failed probe) is one failure of the endpoint, so one down for good is still
disabled at the threshold."""
from __future__ import annotations

from sqlalchemy import func, select

from core.db import db
from core.models.webhooks import WebhookAttempt, WebhookEndpoint
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES
from core.webhooks.sweep import sweep_due_deliveries
from tests.ops.processes import free_port
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


def refusing(engine, factory, receiver, count: int):
    """An institution whose endpoint's port has nothing listening, and `count` events for it, attempted once."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=f"https://{RECEIVER_HOST}:{free_port()}/hooks")
    events = [emit(engine, "webhook.test", institution) for _ in range(count)]
    run_worker(engine)
    return institution, events


def probe(engine, clock, institution, due: int) -> None:
    """Move to the next probe time; the sweep finds `due` deliveries; a worker drains them."""
    clock.move_to(max(d.next_attempt_at for d in deliveries(engine, institution)))
    with engine.app_context():
        assert sweep_due_deliveries() == due
    run_worker(engine)


def test_a_receiver_refusing_connections_uses_no_retries_and_gets_the_backlog_at_once_when_back(
        engine, factory, receiver, clock):
    institution, events = refusing(engine, factory, receiver, 3)
    waiting = deliveries(engine, institution)
    assert {(d.status, d.attempts, d.last_error_class) for d in waiting} == {("retry_scheduled", 0, "connection")}
    assert all(15 <= (d.next_attempt_at - d.updated_at).total_seconds() <= 30 for d in waiting)
    assert attempts_recorded(engine) == 0

    for _ in range(4):  # about two minutes down: one probe each time, the others wait for its answer
        probe(engine, clock, institution, due=3)
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("retry_scheduled", 0)}
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (True, 1 + 4)  # found down, then 4 probes

    configure(engine, institution, receiver)  # the receiver answers again (at its new address)
    probe(engine, clock, institution, due=3)
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("delivered", 1)}
    assert sorted(r.headers["X-Karibu-Event-Id"] for r in receiver.server.requests) == sorted(events)
    assert attempts_recorded(engine) == 3
    assert endpoint_of(engine, institution).consecutive_failures == 0


def test_a_receiver_down_for_good_is_disabled_after_the_threshold_of_failed_probes(engine, factory, receiver,
                                                                                   clock):
    institution, _ = refusing(engine, factory, receiver, 3)
    for _ in range(DISABLE_AFTER_CONSECUTIVE_FAILURES - 2):
        probe(engine, clock, institution, due=3)
    assert endpoint_of(engine, institution).enabled
    probe(engine, clock, institution, due=3)  # the 20th finding
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (False, DISABLE_AFTER_CONSECUTIVE_FAILURES)
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("endpoint_disabled", 0)}
