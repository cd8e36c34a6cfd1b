"""RQ job: send every due message (queued after commits that wrote messages, and by the sweep)."""
from __future__ import annotations

from core.messages.delivery import drain_due_messages
from core.messages.outbox import DRAIN_JOB, QUEUE_NAME, drain_signal
from jobs import lanes

LANE = "messages"


def drain(hops: int = 0) -> int:
    """Wakes this worker's message lane (jobs/lanes.py); where there is none, drains here and returns how many
    attempts were made, queueing a follow-up drain when its time budget ran out. `hops`: how many workers
    passed this wake-up on already."""
    if lanes.wake(LANE, QUEUE_NAME, DRAIN_JOB, hops):
        return 0
    drain_signal.started()
    result = drain_due_messages()
    if result.more_due:
        drain_signal.signal()
    return len(result.attempts)


def drain_in_lane() -> bool:
    """One drain of the message lane; True when messages are still due (the lane drains again at once, and
    another worker is woken to help)."""
    lanes.without_raising(drain_signal.started)
    result = drain_due_messages()
    if result.more_due:
        lanes.without_raising(drain_signal.signal)
    return result.more_due
