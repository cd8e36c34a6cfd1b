"""RQ job: send every due message (queued after commits that wrote messages, and by the sweep)."""
from __future__ import annotations

from core.messages.delivery import drain_due_messages
from core.messages.outbox import drain_started, signal_drain


def drain() -> int:
    """Returns how many attempts were made; queues a follow-up drain when its time budget ran out."""
    drain_started()
    result = drain_due_messages()
    if result.more_due:
        signal_drain()
    return len(result.attempts)
