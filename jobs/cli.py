"""`flask --app wsgi worker`: an RQ worker with its built-in scheduler, the app context loaded."""
from __future__ import annotations

import click
from flask.cli import with_appcontext

from core.config import settings
from core.extensions import redis_connection
from core.queue import QUEUE_NAMES
from jobs.sweeps import SweepingWorker


@click.command("worker")
@click.option("--queues", default=",".join(QUEUE_NAMES), show_default=True,
              help="Comma-separated queue names, in priority order.")
@click.option("--burst", is_flag=True, help="Exit when the queues are empty (for tests and scripts).")
@with_appcontext
def worker_command(queues: str, burst: bool) -> None:
    """Run an RQ worker (with the scheduler) for Karibu's queues; it keeps the webhook sweep going."""
    names = [name.strip() for name in queues.split(",") if name.strip()]
    worker = SweepingWorker(names, connection=redis_connection(),
                            maintenance_seconds=settings().WORKER_MAINTENANCE_SECONDS)
    worker.work(with_scheduler=True, burst=burst)
