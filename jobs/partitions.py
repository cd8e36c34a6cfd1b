"""The daily making of monthly partitions ahead of time (PostgreSQL), a self-renewing chain on RQ's scheduler like
the retention purge; kept alive by the worker's maintenance (jobs/upkeep.py)."""
from __future__ import annotations

import logging
from datetime import timedelta

from rq import get_current_job
from rq.job import Job

from core.db import redis_connection
from core.privacy.partitions import ensure_partitions
from core.queue import queue
from core.webhooks.runtime import runtime
from jobs.chains import chain_is_alive

PARTITIONS_INTERVAL = timedelta(days=1)
PARTITIONS_QUEUE = "default"
CHAIN_KEY = "karibu:partitions:next"
logger = logging.getLogger("karibu.partitions")


def make_partitions() -> dict:
    """Make this month's and the next months' partitions (moving any row the DEFAULT partition caught), then
    schedule tomorrow's run of this chain."""
    current = get_current_job()
    if current is not None and (redis_connection().get(CHAIN_KEY) or b"").decode() != current.id:
        return {}  # a newer chain replaced this one
    try:
        made = ensure_partitions(runtime.clock.now())
        if made:
            logger.info("Partitions made: %s", made, extra={"partitions_made": made})
        return made
    finally:
        schedule_next_run(PARTITIONS_INTERVAL)


def schedule_next_run(delay: timedelta) -> Job:
    job = queue(PARTITIONS_QUEUE).enqueue_in(delay, "jobs.partitions.make_partitions", result_ttl=86400,
                                             failure_ttl=86400)
    redis_connection().set(CHAIN_KEY, job.id)
    return job


def ensure_partitions_scheduled() -> bool:
    """Start a partitions chain unless a live one exists; True when a new chain was started (first run now)."""
    if chain_is_alive(CHAIN_KEY):
        return False
    schedule_next_run(timedelta(0))
    return True
