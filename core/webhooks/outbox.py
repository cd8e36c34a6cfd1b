"""The outbox: delivery rows written in the caller's transaction, jobs queued only after it commits.

If queueing fails (Redis down) or the job is lost later, the periodic sweep finds the due delivery in
the database and queues it again: the database is the source of truth.
"""

from __future__ import annotations

import logging

from sqlalchemy import event as sa_event
from sqlalchemy.orm import Session

from core.extensions import db
from core.models import Event, new_id
from core.models.webhooks import WebhookDelivery
from core.queue import enqueue
from core.webhooks.endpoints import TEST_EVENT_TYPE, get_endpoint
from core.webhooks.runtime import runtime

log = logging.getLogger(__name__)

DELIVER_JOB = "jobs.deliveries.deliver"
QUEUE_NAME = "webhooks"
_PENDING_KEY = "karibu_webhook_deliveries_to_enqueue"


def add_delivery_for(event: Event) -> WebhookDelivery | None:
    """Write the delivery row for `event` in the current session, if the institution's endpoint takes it.

    `applicant` is removed from application events unless the endpoint includes names. Nothing is
    written when there is no endpoint or the type is not subscribed; a disabled endpoint records the
    delivery as `endpoint_disabled` without sending it.
    """
    endpoint = get_endpoint(event.institution_id)
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
        enqueued_at=now if endpoint.enabled else None,
        created_at=now,
        updated_at=now,
    )
    db.session.add(delivery)
    if endpoint.enabled:
        enqueue_after_commit(delivery.id)
    return delivery


def enqueue_after_commit(delivery_id: str) -> None:
    db.session().info.setdefault(_PENDING_KEY, []).append(delivery_id)


def enqueue_delivery(delivery_id: str) -> None:
    enqueue(QUEUE_NAME, DELIVER_JOB, delivery_id, result_ttl=0, failure_ttl=86400)


@sa_event.listens_for(Session, "after_commit")
def _enqueue_committed(session: Session) -> None:
    pending = session.info.pop(_PENDING_KEY, None)
    for delivery_id in pending or ():
        try:
            enqueue_delivery(delivery_id)
        except Exception:  # Redis unavailable: the sweep queues it once Redis is back
            log.warning("could not queue webhook delivery %s; the sweep will retry", delivery_id, exc_info=True)


@sa_event.listens_for(Session, "after_rollback")
def _forget_rolled_back(session: Session) -> None:
    session.info.pop(_PENDING_KEY, None)
