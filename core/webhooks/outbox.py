"""The outbox: delivery rows written in the caller's transaction, a worker woken only after it commits.

The database is the queue and the source of truth; RQ jobs are wake-up calls. After a commit that made
deliveries due, one drain job is queued unless one is already waiting (a short-lived Redis flag), and the
drain attempts every due delivery. A drain that finds a backlog (more due than its free sender slots)
queues one more drain, which an idle worker picks up and which does the same, so every worker with free
capacity joins in. If queueing fails (Redis down) or the job is lost, the periodic sweep
finds the due deliveries in the database and wakes a worker again.
"""

from __future__ import annotations

from sqlalchemy import event as sa_event
from sqlalchemy.orm import Session

from core.db import db
from core.models import Event, new_id
from core.models.webhooks import WebhookDelivery
from core.outbox.wakeup import DrainSignal
from core.scoping import InstitutionScope
from core.webhooks.endpoints import TEST_EVENT_TYPE, get_endpoint
from core.webhooks.runtime import runtime

DRAIN_JOB = "jobs.deliveries.drain"
QUEUE_NAME = "webhooks"
_ENDPOINTS = "karibu_webhooks_endpoints"

# Wakes the delivery drain (jobs/deliveries.py) after the commit that made deliveries due.
drain_signal = DrainSignal("webhooks", QUEUE_NAME, DRAIN_JOB)


def add_delivery_for(event: Event) -> WebhookDelivery | None:
    """Write the delivery row for `event` in the current session, if the institution's endpoint takes it.

    `applicant` is removed from application events unless the endpoint includes names. Nothing is
    written when there is no endpoint or the type is not subscribed; a disabled endpoint records the
    delivery as `endpoint_disabled` without sending it.
    """
    endpoint = _endpoint_in_this_transaction(event.institution_id)
    if event.type.startswith("application.") and not (endpoint and endpoint.include_applicant_name):
        event.payload = {**event.payload, "applicant": None}
    if endpoint is None:
        return None
    if event.type != TEST_EVENT_TYPE and event.type not in endpoint.event_types:
        return None
    if not event.id:
        event.id = new_id("evt")
    now = runtime.clock.now()
    delivery = WebhookDelivery(
        id=new_id("whd"),
        institution_id=event.institution_id,
        endpoint_id=endpoint.id,
        event_id=event.id,
        event_type=event.type,
        status="pending" if endpoint.enabled else "endpoint_disabled",
        attempts=0,
        next_attempt_at=now if endpoint.enabled else None,
        created_at=now,
        updated_at=now,
    )
    db.session.add(delivery)
    if endpoint.enabled:
        drain_signal.after_commit()
    return delivery


def _endpoint_in_this_transaction(institution_id: str):
    """The institution's endpoint, looked up once per transaction (a bulk update emits many events)."""
    cache = db.session().info.setdefault(_ENDPOINTS, {})
    if institution_id not in cache:
        with db.session.no_autoflush:
            cache[institution_id] = get_endpoint(InstitutionScope(institution_id))
    return cache[institution_id]


@sa_event.listens_for(Session, "after_commit")
@sa_event.listens_for(Session, "after_rollback")
def _forget_endpoints(session: Session) -> None:
    """The per-transaction endpoint cache ends with its transaction."""
    session.info.pop(_ENDPOINTS, None)
