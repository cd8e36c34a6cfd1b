"""`flask --app wsgi worker`: an RQ worker with its built-in scheduler, the app context loaded."""
from __future__ import annotations

import logging
import time

import click
from flask import current_app
from flask.cli import with_appcontext
from prometheus_client import start_http_server
from redis.exceptions import RedisError

from core.config import settings
from core.db import redis_connection
from core.queue import QUEUE_NAMES
from jobs.reconnect import Backoff, wait_for_database, wait_for_redis

log = logging.getLogger(__name__)

# A worker loop that ran at least this long before it ended starts again after the shortest pause.
STEADY_RUN_SECONDS = 60.0
# On shutdown, how long the drain lanes may take to finish what they are sending (a drain's time budget and its
# last sends).
LANE_STOP_SECONDS = 40.0


@click.command("worker")
@click.option("--queues", default=",".join(QUEUE_NAMES), show_default=True,
              help="Comma-separated queue names, in priority order.")
@click.option("--burst", is_flag=True, help="Exit when the queues are empty (for tests and scripts).")
@click.option("--lanes/--no-lanes", default=True, show_default=True,
              help="Drain webhooks and messages on lanes of their own; --no-lanes runs each drain as an RQ job "
                   "(one at a time, under RQ's job timeout).")
@with_appcontext
def worker_command(queues: str, burst: bool, lanes: bool) -> None:
    """Run an RQ worker (with the scheduler) for Karibu's queues; it keeps the webhook sweep going. Webhook
    deliveries and messages drain on lanes of their own (jobs/lanes.py), beside the jobs RQ runs.
    """
    config = settings()
    if config.WORKER_METRICS_PORT:
        # This process's counters (webhook attempts and latency…) for Prometheus, on a thread of its own.
        start_http_server(config.WORKER_METRICS_PORT, addr=config.WORKER_METRICS_ADDRESS)
    # RQ's worker (and every job module) only in worker processes
    from jobs import deliveries, messages
    from jobs.lanes import start_lanes, stop_lanes

    names = [name.strip() for name in queues.split(",") if name.strip()]
    outboxes = (deliveries.LANE, messages.LANE)
    start_lanes(current_app._get_current_object(),
                {lane.name: lane.drain_once for lane in outboxes if lanes and lane.name in names})
    try:
        _work(names, burst, config)
    finally:
        stop_lanes(timeout=LANE_STOP_SECONDS)


def _work(names: list[str], burst: bool, config) -> None:
    from jobs.upkeep import SweepingWorker

    backoff = Backoff()
    while True:
        wait_for_redis()
        wait_for_database()
        started = time.monotonic()
        worker = None
        try:
            # RQ's constructor already talks to Redis (CLIENT SETNAME): inside the try, like the loop.
            worker = SweepingWorker(names, connection=redis_connection(),
                                    maintenance_seconds=config.WORKER_MAINTENANCE_SECONDS)
            worker.work(with_scheduler=True, burst=burst)
        except RedisError as error:
            log.warning("worker stopped: Redis unavailable (%s: %s)", type(error).__name__, error)
        if worker is not None and (burst or worker.shutdown_requested):
            return
        if time.monotonic() - started >= STEADY_RUN_SECONDS:
            backoff.reset()
        pause = backoff.next_pause()
        log.warning("worker loop ended unexpectedly; starting again in %.1f s", pause)
        time.sleep(pause)
