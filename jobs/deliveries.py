"""RQ job: one webhook delivery attempt (queued by the outbox after commit, and by the sweep)."""
from __future__ import annotations

from core.webhooks.delivery import attempt_delivery


def deliver(delivery_id: str) -> str | None:
    """Attempt the delivery if it is due and unclaimed; returns its new status (None: nothing to do)."""
    return attempt_delivery(delivery_id).status
