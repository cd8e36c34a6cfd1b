"""RQ job: attempt every due webhook delivery (queued after commits that made deliveries due, by the
sweep, and by a drain that found a backlog, so every idle worker joins in)."""
from __future__ import annotations

from core.webhooks.delivery import drain_due_deliveries
from core.webhooks.outbox import DRAIN_JOB, QUEUE_NAME, drain_signal
from jobs import lanes

LANE = "webhooks"


def drain(hops: int = 0) -> int:
    """Wakes this worker's webhook lane (jobs/lanes.py); where there is none, drains here and returns how many
    attempts were made, queueing a follow-up drain when its time budget ran out. `hops`: how many workers
    passed this wake-up on already."""
    if lanes.wake(LANE, QUEUE_NAME, DRAIN_JOB, hops):
        return 0
    drain_signal.started()
    result = drain_due_deliveries(on_backlog=drain_signal.signal_quietly)
    if result.more_due:
        drain_signal.signal()
    return len(result.attempts)


def drain_in_lane() -> bool:
    """One drain of the webhook lane; True when deliveries are still due (the lane drains again at once; a
    backlog already woke another worker)."""
    lanes.without_raising(drain_signal.started)
    return drain_due_deliveries(on_backlog=drain_signal.signal_quietly).more_due
