"""The sweep: wake a worker when deliveries are due and unclaimed (retries coming due, jobs lost with
Redis, claims of a worker that died). Runs periodically; an extra wake-up is harmless because attempts
are claimed."""

from __future__ import annotations

from sqlalchemy import func, or_, select, text

from core.db import db
from core.models.webhooks import SENDABLE_STATUSES, WebhookDelivery
from core.webhooks.outbox import signal_drain
from core.webhooks.runtime import runtime


# The count runs in workers' maintenance too, outside any job timeout: never wait long for a lock.
LOCK_TIMEOUT = "5s"


def count_due_deliveries() -> int:
    now = runtime.clock.now()
    if db.session.get_bind().dialect.name == "postgresql":
        db.session.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    count = db.session.scalar(
        select(func.count()).select_from(WebhookDelivery).where(
            WebhookDelivery.status.in_(SENDABLE_STATUSES),
            WebhookDelivery.next_attempt_at <= now,
            or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now),
        )
    )
    db.session.rollback()
    return count


def sweep_due_deliveries() -> int:
    """Queue a drain when deliveries are due and unclaimed; returns how many are due."""
    due = count_due_deliveries()
    if due:
        signal_drain()
    return due
