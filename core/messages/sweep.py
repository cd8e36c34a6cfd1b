"""The message sweep, run with the webhook sweep: wake a worker when messages are due and unclaimed
(core/outbox/leases.py `sweep`)."""
from __future__ import annotations

from core.messages.delivery import MESSAGES
from core.messages.outbox import drain_signal
from core.outbox.leases import sweep


def sweep_due_messages() -> int:
    """Queue a drain when messages are due and unclaimed; returns how many are due."""
    return sweep(MESSAGES, drain_signal)
