"""Faults inside jobs: a failing sweep never ends the sweep, a job timed out inside a database call never
kills the worker."""
from __future__ import annotations

import os
import signal

import pytest
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry
from sqlalchemy import create_engine, text

from core.config import normalise_database_url
from core.db import redis_connection
from jobs import upkeep
from tests.conftest import TEST_DB
from tests.webhooks.conftest import run_worker, wait_until
from tests.webhooks.test_webhook_engine import configure, deliveries, emit
from tests.webhooks.test_webhook_recovery import start_worker


def scheduled_sweeps(app) -> list[str]:
    with app.app_context():
        return ScheduledJobRegistry(upkeep.SWEEP_QUEUE, connection=redis_connection()).get_job_ids()


def run_scheduled_sweep(app, job_id: str) -> None:
    """Do what RQ's scheduler does when the sweep comes due: move it to its queue."""
    with app.app_context():
        connection = redis_connection()
        ScheduledJobRegistry(upkeep.SWEEP_QUEUE, connection=connection).remove(job_id)
        Queue(upkeep.SWEEP_QUEUE, connection=connection).enqueue_job(Job.fetch(job_id, connection=connection))
    run_worker(app)


def test_a_failed_sweep_does_not_stop_the_next_one(engine, factory, receiver, redis_client, monkeypatch):
    institution = factory.institution()
    configure(engine, institution, receiver)
    emit(engine, "webhook.test", institution)
    redis_client.flushdb()  # the delivery's job is lost: only a sweep can find it
    with engine.app_context():
        assert upkeep.ensure_sweep_scheduled() is True
    [first] = scheduled_sweeps(engine)

    def database_unavailable():
        raise RuntimeError("database unavailable")

    working_sweep = upkeep.sweep_due_deliveries
    monkeypatch.setattr(upkeep, "sweep_due_deliveries", database_unavailable)
    run_scheduled_sweep(engine, first)
    with engine.app_context():
        assert Job.fetch(first, connection=redis_connection()).get_status() == JobStatus.FAILED
    assert deliveries(engine, institution)[0].status == "pending"

    monkeypatch.setattr(upkeep, "sweep_due_deliveries", working_sweep)
    [following] = scheduled_sweeps(engine)  # the failed sweep had scheduled its successor
    run_scheduled_sweep(engine, following)
    run_worker(engine)  # the drain the sweep queued
    assert deliveries(engine, institution)[0].status == "delivered"


def test_a_chain_ending_in_a_failed_job_is_started_again(engine, redis_client):
    """A failed job is kept for an hour: its existence must not count as a live chain."""
    with engine.app_context():
        failing = Queue(upkeep.SWEEP_QUEUE, connection=redis_connection()).enqueue("jobs.upkeep.no_such_job")
        redis_client.set(upkeep.CHAIN_KEY, failing.id)
    run_worker(engine)
    with engine.app_context():
        assert Job.fetch(failing.id, connection=redis_connection()).get_status() == JobStatus.FAILED
        assert upkeep.ensure_sweep_scheduled() is True
        [scheduled] = scheduled_sweeps(engine)
        assert redis_client.get(upkeep.CHAIN_KEY).decode() == scheduled
        assert upkeep.ensure_sweep_scheduled() is False  # the new chain is live


@pytest.mark.skipif(TEST_DB != "postgres", reason="a lock wait interrupted inside psycopg is PostgreSQL's case")
def test_a_job_timed_out_inside_a_database_call_does_not_kill_the_worker(engine, factory, receiver,
                                                                          database_url):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    # no sweep or maintenance pass during the test: only the drain below meets the lock
    # drains as RQ jobs (no lanes), so the drain job itself meets the lock under RQ's job timeout
    worker = start_worker(engine, receiver, database_url, "--no-lanes", WEBHOOK_SWEEP_SECONDS="3600",
                          WORKER_MAINTENANCE_SECONDS="3600")
    locker = create_engine(normalise_database_url(database_url))
    try:
        emit(engine, "webhook.test", institution)
        # the worker is up, has recorded that delivery and waits for jobs
        assert wait_until(lambda: [d.status for d in deliveries(engine, institution)] == ["delivered"], 60)
        with locker.connect() as connection:
            connection.execute(text("LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE"))
            with engine.app_context():
                stuck = Queue("webhooks", connection=redis_connection()).enqueue("jobs.deliveries.drain",
                                                                                 job_timeout=2)
            assert wait_for_status(engine, stuck.id, JobStatus.FAILED, timeout=60)
            connection.rollback()  # the lock is released
        assert worker.poll() is None, "the worker process exited"

        event_id = emit(engine, "webhook.test", institution)
        requests = receiver.server.wait_for(2, timeout=60)
        assert [request.headers["X-Karibu-Event-Id"] for request in requests][1:] == [event_id]
        assert worker.poll() is None
    finally:
        locker.dispose()
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def wait_for_status(app, job_id: str, status: JobStatus, timeout: float) -> bool:
    with app.app_context():
        connection = redis_connection()
        return wait_until(lambda: Job.fetch(job_id, connection=connection).get_status() == status, timeout)
