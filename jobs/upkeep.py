"""Upkeep: the periodic sweep of both outboxes (and the counters' compaction), a self-renewing chain of jobs on RQ's
scheduler, and the worker that keeps it and the retention chain alive (docs/webhooks.md, "Reliability")."""
from __future__ import annotations

import logging
from datetime import timedelta

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from rq import SimpleWorker, get_current_job
from rq.job import Job

from core.config import settings
from core.applications.counters import compact_counts
from core.db import discard_session, redis_connection
from core.messages.sweep import sweep_due_messages
from core.queue import queue
from core.webhooks.sweep import sweep_due_deliveries
from jobs.chains import chain_is_alive
from jobs.partitions import ensure_partitions_scheduled
from jobs.reconnect import wait_for_database, wait_for_redis
from jobs.retention import ensure_purge_scheduled
from jobs.sender_domains import ensure_recheck_scheduled

log = logging.getLogger(__name__)

SWEEP_QUEUE = "webhooks"
CHAIN_KEY = "karibu:webhooks:sweep:next"
# RQ waits for a job this much longer than its dequeue timeout before it calls the worker dead.
RQ_TTL_MARGIN_SECONDS = 15


def sweep_interval() -> timedelta:
    return timedelta(seconds=settings().WEBHOOK_SWEEP_SECONDS)


def sweep() -> int:
    """Schedule the next sweep of this chain, then queue due deliveries and messages whose job is missing."""
    current = get_current_job()
    connection = redis_connection()
    if current is not None and (connection.get(CHAIN_KEY) or b"").decode() != current.id:
        return 0  # a newer chain replaced this one
    schedule_next_sweep(sweep_interval())
    queued = sweep_due_deliveries() + sweep_due_messages()
    compact_counts()  # keeps counter reads at about one row per combination
    return queued


def schedule_next_sweep(delay: timedelta) -> Job:
    job = queue(SWEEP_QUEUE).enqueue_in(delay, "jobs.upkeep.sweep", result_ttl=0, failure_ttl=3600)
    redis_connection().set(CHAIN_KEY, job.id)
    return job


def ensure_sweep_scheduled() -> bool:
    """Start a sweep chain unless a live one exists; True when a new chain was started."""
    if chain_is_alive(CHAIN_KEY):
        return False
    schedule_next_sweep(timedelta(0))
    return True


class SweepingWorker(SimpleWorker):
    """An RQ worker that keeps the sweep going, runs jobs in its own process (a fresh session each) and never
    dies of a job's broken database connection."""

    # RQ's own retry of a dequeue cut by Redis; the heartbeat below then waits out the outage itself.
    max_connection_wait_time = 5.0

    def __init__(self, *args, maintenance_seconds: int = 30, on_shutdown_request=None, **kwargs):
        # An idle worker blocks waiting for a job for worker_ttl - 15 seconds, and maintenance runs only
        # between two waits: tie both to the maintenance interval.
        kwargs.setdefault("maintenance_interval", maintenance_seconds)
        kwargs.setdefault("worker_ttl", maintenance_seconds + RQ_TTL_MARGIN_SECONDS)
        super().__init__(*args, **kwargs)
        self.shutdown_requested = False  # by a signal, as opposed to the loop giving up on an error
        self._on_shutdown_request = on_shutdown_request  # e.g. the lanes stop claiming at once

    def handle_warm_shutdown_request(self):
        self.shutdown_requested = True
        if self._on_shutdown_request is not None:
            self._on_shutdown_request()
        super().handle_warm_shutdown_request()

    def perform_job(self, job, queue):
        try:
            return super().perform_job(job, queue)
        finally:
            discard_session()  # a failed job never leaves a broken transaction for the next one

    def heartbeat(self, timeout=None, pipeline=None):
        """A heartbeat that finds Redis down waits (with back-off, logged and counted) until it is back."""
        if pipeline is not None:  # only queued on the pipeline: nothing is sent yet
            return super().heartbeat(timeout, pipeline)
        try:
            return super().heartbeat(timeout)
        except RedisConnectionError:
            wait_for_redis()
            return super().heartbeat(timeout)

    def run_maintenance_tasks(self):
        wait_for_database()  # no job can do anything useful without it
        try:
            super().run_maintenance_tasks()
        except RedisError:
            self.log.warning("worker maintenance: Redis unavailable, trying again at the next pass")
        keep_sweeping()


def keep_sweeping() -> None:
    """Make sure the sweep, daily retention and partitions chains are alive and sweep once now; errors are logged,
    never raised."""
    try:
        ensure_sweep_scheduled()
        ensure_purge_scheduled()
        ensure_partitions_scheduled()
        ensure_recheck_scheduled()
        sweep_due_deliveries()
        sweep_due_messages()
    except Exception:
        log.warning("sweep from worker maintenance failed; trying again at the next pass",
                    exc_info=True)
    finally:
        discard_session()
