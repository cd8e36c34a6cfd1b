"""Self-renewing job chains on RQ's scheduler (the sweep, the daily retention purge): is one alive?"""
from __future__ import annotations

from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from core.db import redis_connection

LIVE_STATUSES = frozenset({JobStatus.SCHEDULED, JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED})


def chain_is_alive(chain_key: str) -> bool:
    connection = redis_connection()
    next_id = connection.get(chain_key)
    if next_id is None:
        return False
    try:
        job = Job.fetch(next_id.decode(), connection=connection)
    except NoSuchJobError:
        return False
    return job.get_status(refresh=False) in LIVE_STATUSES
