"""RQ job `jobs.deliveries.drain`: drain the webhook outbox (jobs/lanes.py `OutboxLane`)."""
from __future__ import annotations

from core.webhooks.delivery import DELIVERIES, drain_due_deliveries
from core.webhooks.outbox import drain_signal
from jobs.lanes import OutboxLane

LANE = OutboxLane(drain_signal, drain_due_deliveries, DELIVERIES)


def drain(hops: int = 0) -> int:
    return LANE.job(hops)
