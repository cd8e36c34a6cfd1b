"""RQ job `jobs.messages.drain`: drain the message outbox (jobs/lanes.py `OutboxLane`)."""
from __future__ import annotations

from core.messages.delivery import MESSAGES, drain_due_messages
from core.messages.outbox import drain_signal
from jobs.lanes import OutboxLane

LANE = OutboxLane(drain_signal, drain_due_messages, MESSAGES)


def drain(hops: int = 0) -> int:
    return LANE.job(hops)
