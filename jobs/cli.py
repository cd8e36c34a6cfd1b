"""`flask --app wsgi worker`: an RQ worker with its built-in scheduler, the app context loaded."""
from __future__ import annotations

import logging
import time

import click
from flask.cli import with_appcontext
from prometheus_client import start_http_server
from redis.exceptions import RedisError

from core.config import settings
from core.db import redis_connection
from core.queue import QUEUE_NAMES

log = logging.getLogger(__name__)

# After RQ's work loop gave up (it quits on a Redis error met between two jobs), wait this long and start again.
RESTART_PAUSE_SECONDS = 2.0


@click.command("worker")
@click.option("--queues", default=",".join(QUEUE_NAMES), show_default=True,
              help="Comma-separated queue names, in priority order.")
@click.option("--burst", is_flag=True, help="Exit when the queues are empty (for tests and scripts).")
@with_appcontext
def worker_command(queues: str, burst: bool) -> None:
    """Run an RQ worker (with the scheduler) for Karibu's queues; it keeps the webhook sweep going.

    The process outlives Redis outages: when RQ's loop quits on a Redis error, a new worker starts after a
    short pause. It stops only when asked to (SIGTERM/SIGINT) or, with --burst, when the queues are empty.
    """
    config = settings()
    if config.WORKER_METRICS_PORT:
        # This process's counters (webhook attempts and latency…) for Prometheus, on a thread of its own.
        start_http_server(config.WORKER_METRICS_PORT, addr=config.WORKER_METRICS_ADDRESS)
    from jobs.sweeps import SweepingWorker  # RQ's worker (and every job module) only in worker processes

    names = [name.strip() for name in queues.split(",") if name.strip()]
    while True:
        worker = SweepingWorker(names, connection=redis_connection(),
                                maintenance_seconds=config.WORKER_MAINTENANCE_SECONDS)
        try:
            worker.work(with_scheduler=True, burst=burst)
        except RedisError:
            log.warning("worker stopped: Redis unavailable", exc_info=True)
        if burst or worker.shutdown_requested:
            return
        log.warning("worker loop ended unexpectedly; starting again in %.0f s", RESTART_PAUSE_SECONDS)
        time.sleep(RESTART_PAUSE_SECONDS)
