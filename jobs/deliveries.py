"""RQ job: attempt every due webhook delivery (queued after commits that made deliveries due, by the
sweep, and by a drain that found a backlog, so every idle worker joins in)."""
from __future__ import annotations

from core.webhooks.delivery import drain_due_deliveries
from core.webhooks.outbox import drain_started, signal_drain, wake_another_drain


def drain() -> int:
    """Returns how many attempts were made; queues a follow-up drain when its time budget ran out."""
    drain_started()
    result = drain_due_deliveries(on_backlog=wake_another_drain)
    if result.more_due:
        signal_drain()
    return len(result.attempts)
