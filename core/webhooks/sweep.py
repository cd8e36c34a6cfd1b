"""The sweep: queue every due delivery whose job is missing (never queued, lost with Redis, or held by a
worker that died). Runs periodically; duplicates are harmless because attempts are claimed."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import or_, select, update

from core.extensions import db
from core.models.webhooks import SENDABLE_STATUSES, WebhookDelivery
from core.webhooks.outbox import enqueue_delivery
from core.webhooks.runtime import runtime

# A job queued this long ago without an attempt being recorded is presumed lost.
REQUEUE_AFTER = timedelta(minutes=2)
BATCH = 500


def sweep_due_deliveries() -> int:
    """Queue due deliveries without a live job; returns how many were queued."""
    now = runtime.clock.now()
    due_ids = list(db.session.scalars(
        select(WebhookDelivery.id)
        .where(
            WebhookDelivery.status.in_(SENDABLE_STATUSES),
            WebhookDelivery.next_attempt_at <= now,
            or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now),
            or_(
                WebhookDelivery.enqueued_at.is_(None),
                WebhookDelivery.enqueued_at < WebhookDelivery.next_attempt_at,
                WebhookDelivery.enqueued_at < now - REQUEUE_AFTER,
            ),
        )
        .order_by(WebhookDelivery.next_attempt_at)
        .limit(BATCH)
    ))
    if not due_ids:
        db.session.rollback()
        return 0
    db.session.execute(update(WebhookDelivery).where(WebhookDelivery.id.in_(due_ids)).values(enqueued_at=now))
    db.session.commit()
    for delivery_id in due_ids:
        enqueue_delivery(delivery_id)
    return len(due_ids)
