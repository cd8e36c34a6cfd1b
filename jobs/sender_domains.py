"""The daily re-check of every institution's sending domains, a self-renewing chain on RQ's scheduler (like the
retention purge): a domain whose record is gone stops being used and its admins are emailed."""
from __future__ import annotations

import logging
from datetime import timedelta

from rq import get_current_job
from rq.job import Job

from core.db import redis_connection
from core.institutions.sender_domains import recheck_sender_domains
from core.queue import queue
from jobs.chains import chain_is_alive

RECHECK_INTERVAL = timedelta(days=1)
RECHECK_QUEUE = "default"
CHAIN_KEY = "karibu:sender-domains:next"
# Each domain takes two look-ups of at most 5 s each.
RECHECK_TIMEOUT_SECONDS = 3600
logger = logging.getLogger("karibu.sender_domains")


def recheck() -> dict:
    """Look every sending domain up again, then schedule tomorrow's re-check of this chain."""
    current = get_current_job()
    if current is not None and (redis_connection().get(CHAIN_KEY) or b"").decode() != current.id:
        return {}  # a newer chain replaced this one
    try:
        counts = recheck_sender_domains()
        logger.info("Sending domains re-checked: %s", counts, extra={"sender_domains": counts})
        return counts
    finally:
        schedule_next_recheck(RECHECK_INTERVAL)


def schedule_next_recheck(delay: timedelta) -> Job:
    job = queue(RECHECK_QUEUE).enqueue_in(delay, "jobs.sender_domains.recheck", result_ttl=86400,
                                          failure_ttl=86400, job_timeout=RECHECK_TIMEOUT_SECONDS)
    redis_connection().set(CHAIN_KEY, job.id)
    return job


def ensure_recheck_scheduled() -> bool:
    """Start a re-check chain unless a live one exists; True when a new chain was started (first run now)."""
    if chain_is_alive(CHAIN_KEY):
        return False
    schedule_next_recheck(timedelta(0))
    return True
