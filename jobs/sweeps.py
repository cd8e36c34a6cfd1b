"""The periodic webhook sweep, run by RQ's built-in scheduler as a self-renewing chain of jobs.

Exactly one chain is live: Redis remembers the id of the next scheduled sweep, and a sweep whose id is not
that one stops its chain. Workers check at start-up and at every maintenance pass that a chain exists, so
it comes back by itself after Redis loses its data.
"""
from __future__ import annotations

from datetime import timedelta

from rq import SimpleWorker, get_current_job
from rq.job import Job

from core.extensions import db, redis_connection
from core.queue import queue
from core.webhooks.sweep import sweep_due_deliveries
from jobs.retention import ensure_purge_scheduled

SWEEP_INTERVAL = timedelta(seconds=10)
SWEEP_QUEUE = "webhooks"
CHAIN_KEY = "karibu:webhooks:sweep:next"


def sweep() -> int:
    """Queue due deliveries whose job is missing, then schedule the next sweep of this chain."""
    current = get_current_job()
    connection = redis_connection()
    if current is not None and (connection.get(CHAIN_KEY) or b"").decode() != current.id:
        return 0  # a newer chain replaced this one
    queued = sweep_due_deliveries()
    schedule_next_sweep(SWEEP_INTERVAL)
    return queued


def schedule_next_sweep(delay: timedelta) -> Job:
    job = queue(SWEEP_QUEUE).enqueue_in(delay, "jobs.sweeps.sweep", result_ttl=0, failure_ttl=3600)
    redis_connection().set(CHAIN_KEY, job.id)
    return job


def ensure_sweep_scheduled() -> bool:
    """Start a sweep chain unless a live one exists; True when a new chain was started."""
    connection = redis_connection()
    next_id = connection.get(CHAIN_KEY)
    if next_id is not None and Job.exists(next_id.decode(), connection=connection):
        return False
    schedule_next_sweep(timedelta(0))
    return True


class SweepingWorker(SimpleWorker):
    """An RQ worker that keeps the sweep and the daily retention chains alive (checked at start and every
    maintenance pass).

    Jobs run in the worker process itself (no fork per job), so the webhook transport keeps its
    keep-alive connections and the database pool its connections; each job gets a fresh session.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("maintenance_interval", 60)
        super().__init__(*args, **kwargs)

    def perform_job(self, job, queue):
        try:
            return super().perform_job(job, queue)
        finally:
            db.session.remove()  # a failed job never leaves a broken transaction for the next one

    def run_maintenance_tasks(self):
        super().run_maintenance_tasks()
        ensure_sweep_scheduled()
        ensure_purge_scheduled()
