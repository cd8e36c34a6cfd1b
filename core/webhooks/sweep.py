"""The webhook sweep: wake a worker when deliveries are due and unclaimed (core/outbox/leases.py `sweep`)."""

from __future__ import annotations

from core.outbox.leases import sweep
from core.webhooks.delivery import DELIVERIES
from core.webhooks.outbox import drain_signal


def sweep_due_deliveries() -> int:
    """Queue a drain when deliveries are due and unclaimed; returns how many are due."""
    return sweep(DELIVERIES, drain_signal)
