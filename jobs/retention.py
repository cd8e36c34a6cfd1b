"""The daily retention purge, run by RQ's built-in scheduler as a self-renewing chain (like the sweep)."""
from __future__ import annotations

import logging
from datetime import timedelta

from rq import get_current_job
from rq.job import Job

from core.db import redis_connection
from core.queue import queue
from core.privacy.retention import run_retention
from jobs.chains import chain_is_alive

RETENTION_INTERVAL = timedelta(days=1)
RETENTION_QUEUE = "default"
CHAIN_KEY = "karibu:retention:next"
# A first purge of a large backlog can take minutes; it commits every batch, so a timeout loses nothing.
PURGE_TIMEOUT_SECONDS = 3600
logger = logging.getLogger("karibu.retention")


def purge() -> dict:
    """Delete expired rows, then schedule tomorrow's purge of this chain."""
    current = get_current_job()
    if current is not None and (redis_connection().get(CHAIN_KEY) or b"").decode() != current.id:
        return {}  # a newer chain replaced this one
    try:
        reports = run_retention()
        summary = {report.name: report.deleted for report in reports}
        logger.info("Retention purge done: %s", summary, extra={"deleted": summary})
        return summary
    finally:
        schedule_next_purge(RETENTION_INTERVAL)


def schedule_next_purge(delay: timedelta) -> Job:
    job = queue(RETENTION_QUEUE).enqueue_in(delay, "jobs.retention.purge", result_ttl=86400, failure_ttl=86400,
                                            job_timeout=PURGE_TIMEOUT_SECONDS)
    redis_connection().set(CHAIN_KEY, job.id)
    return job


def ensure_purge_scheduled() -> bool:
    """Start a purge chain unless a live one exists; True when a new chain was started (first run now)."""
    if chain_is_alive(CHAIN_KEY):  # a failed purge ends its chain: a new one starts (RQ keeps it 24 h)
        return False
    schedule_next_purge(timedelta(0))
    return True
