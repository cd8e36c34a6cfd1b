"""`flask --app wsgi worker`: an RQ worker with its built-in scheduler, the app context loaded."""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
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
# On shutdown, how long the drain lanes (stopped together) may take to record what they are sending: a webhook
# attempt lasts at most 10 s, an email a few MAIL_TIMEOUTs; the process exits within 30 s of SIGTERM.
LANE_STOP_SECONDS = 25.0
# prctl(2): have the kernel send a signal to this process when its parent dies.
PR_SET_PDEATHSIG = 1


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
    deliveries and messages drain on lanes of their own (jobs/lanes.py), beside the jobs RQ runs. On SIGTERM it
    stops claiming, finishes the sends in flight and exits within 30 s.
    """
    config = settings()
    worker_pid = os.getpid()
    # RQ forks its scheduler from this process: the child ends with it (`_end_with_the_worker`)
    os.register_at_fork(after_in_child=lambda: _end_with_the_worker(worker_pid))
    if config.WORKER_METRICS_PORT:
        # This process's counters (webhook attempts and latency…) for Prometheus, on a thread of its own; no
        # forked child keeps its socket (a scheduler outliving a killed worker would hold the port).
        metrics_server, _ = start_http_server(config.WORKER_METRICS_PORT, addr=config.WORKER_METRICS_ADDRESS)
        os.register_at_fork(after_in_child=metrics_server.socket.close)
    # RQ's worker (and every job module) only in worker processes
    from jobs import deliveries, messages
    from jobs.lanes import finish_lanes, start_lanes, stop_claiming, stop_lanes

    names = [name.strip() for name in queues.split(",") if name.strip()]
    outboxes = (deliveries.LANE, messages.LANE)
    start_lanes(current_app._get_current_object(), [lane for lane in outboxes if lanes and lane.name in names])
    try:
        _work(names, burst, config, stop_claiming)
    except BaseException:
        stop_lanes(timeout=LANE_STOP_SECONDS)
        raise
    if burst:
        finish_lanes()  # --burst: what is due is delivered before the exit
    else:
        stop_lanes(timeout=LANE_STOP_SECONDS)


def _end_with_the_worker(worker_pid: int) -> None:
    """In a child forked from the worker (RQ's scheduler): SIGTERM when the worker dies, even by SIGKILL, so the
    child stops (RQ's scheduler releases its locks) instead of living on (Linux; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != worker_pid:  # the worker died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _work(names: list[str], burst: bool, config, stop_claiming) -> None:
    """RQ's worker loop, started again after a Redis failure, until SIGTERM (or, with `burst`, empty queues)."""
    from rq.exceptions import StopRequested

    from jobs.upkeep import SweepingWorker

    def stop_requested(signum, frame):
        stop_claiming()
        raise StopRequested()

    backoff = Backoff()
    while True:
        # between RQ's loops (waiting out an outage, pausing) SIGTERM is ours
        signal.signal(signal.SIGTERM, stop_requested)
        signal.signal(signal.SIGINT, stop_requested)
        started = time.monotonic()
        worker = None
        try:
            wait_for_redis()
            wait_for_database()
            # RQ's constructor already talks to Redis (CLIENT SETNAME): inside the try, like the loop.
            worker = SweepingWorker(names, connection=redis_connection(),
                                    maintenance_seconds=config.WORKER_MAINTENANCE_SECONDS,
                                    on_shutdown_request=stop_claiming)
            worker.work(with_scheduler=True, burst=burst)
        except RedisError as error:
            log.warning("worker stopped: Redis unavailable (%s: %s)", type(error).__name__, error)
        except StopRequested:
            return
        if worker is not None and (burst or worker.shutdown_requested):
            return
        if time.monotonic() - started >= STEADY_RUN_SECONDS:
            backoff.reset()
        pause = backoff.next_pause()
        log.warning("worker loop ended unexpectedly; starting again in %.1f s", pause)
        try:
            signal.signal(signal.SIGTERM, stop_requested)
            signal.signal(signal.SIGINT, stop_requested)
            time.sleep(pause)
        except StopRequested:
            return
