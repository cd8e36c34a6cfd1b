"""The webhook outbox: delivery rows written in the caller's transaction, and the drain's wake-up after it commits."""

from __future__ import annotations

from sqlalchemy import event as sa_event
from sqlalchemy.orm import Session

from core.db import db
from core.models import Event, new_id
from core.models.webhooks import WebhookDelivery
from core.outbox.wakeup import DrainSignal
from core.institutions.sandbox import is_test_mode, live_scope
from core.scoping import InstitutionScope
from core.webhooks.endpoints import TEST_EVENT_TYPE, get_endpoint
from core.webhooks.runtime import runtime

DRAIN_JOB = "jobs.deliveries.drain"
QUEUE_NAME = "webhooks"
_ENDPOINTS = "karibu_webhooks_endpoints"

# Wakes the delivery drain (jobs/deliveries.py) after the commit that made deliveries due.
drain_signal = DrainSignal("webhooks", QUEUE_NAME, DRAIN_JOB)


def add_delivery_for(event: Event) -> WebhookDelivery | None:
    """Write the delivery row for `event` in the current session if the institution's endpoint subscribes to it
    (`applicant` removed unless it includes names; `endpoint_disabled` when the endpoint is disabled)."""
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
    """The institution's endpoint (a sandbox's: its own test endpoint, else the live institution's), looked up once
    per transaction (a bulk update emits many events)."""
    cache = db.session().info.setdefault(_ENDPOINTS, {})
    if institution_id not in cache:
        scope = InstitutionScope(institution_id)
        with db.session.no_autoflush:
            endpoint = get_endpoint(scope)
            if endpoint is None and is_test_mode(scope):
                endpoint = get_endpoint(live_scope(scope))
            cache[institution_id] = endpoint
    return cache[institution_id]


@sa_event.listens_for(Session, "after_commit")
@sa_event.listens_for(Session, "after_rollback")
def _forget_endpoints(session: Session) -> None:
    """The per-transaction endpoint cache ends with its transaction."""
    session.info.pop(_ENDPOINTS, None)
