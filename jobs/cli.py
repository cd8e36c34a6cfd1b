"""`flask --app wsgi worker`: an RQ worker with its built-in scheduler, the app context loaded."""
from __future__ import annotations

import click
from flask import current_app
from flask.cli import with_appcontext
from prometheus_client import start_http_server

from core.extensions import redis_connection
from core.queue import QUEUE_NAMES
from jobs.sweeps import SweepingWorker


@click.command("worker")
@click.option("--queues", default=",".join(QUEUE_NAMES), show_default=True,
              help="Comma-separated queue names, in priority order.")
@click.option("--burst", is_flag=True, help="Exit when the queues are empty (for tests and scripts).")
@with_appcontext
def worker_command(queues: str, burst: bool) -> None:
    """Run an RQ worker (with the scheduler) for Karibu's queues; it keeps the webhook sweep scheduled."""
    port = current_app.config.get("WORKER_METRICS_PORT") or 0
    if port:
        # This process's counters (webhook attempts and latency…) for Prometheus, on a thread of its own.
        start_http_server(port, addr=current_app.config.get("WORKER_METRICS_ADDRESS", "127.0.0.1"))
    names = [name.strip() for name in queues.split(",") if name.strip()]
    worker = SweepingWorker(names, connection=redis_connection())
    worker.work(with_scheduler=True, burst=burst)
