"""No event is lost: a worker killed mid-delivery, the sweep chain kept alive through RQ's scheduler."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta

import redis
from rq import Queue
from rq.registry import ScheduledJobRegistry

from core.db import redis_connection
from core.webhooks.sweep import sweep_due_deliveries
from jobs import upkeep
from tests.conftest import REDIS_URL
from tests.webhooks.conftest import own_redis, run_worker, wait_until  # noqa: F401
from tests.webhooks.test_webhook_engine import configure, deliveries, emit


def start_worker(engine, receiver, database_url, *extra, redis_url: str = REDIS_URL,
                 **settings) -> subprocess.Popen:
    """A real `flask worker` process on the test database, trusting the receiver's CA; `settings` are
    extra environment variables (e.g. WORKER_MAINTENANCE_SECONDS="2")."""
    environment = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url,
                       SECRET_KEY=engine.config["SECRET_KEY"], WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
                       WEBHOOK_CA_BUNDLE=receiver.ca_path, **settings)
    return subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "worker", "--queues", "webhooks",
                             *extra], env=environment, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def blocked_clients(server_url: str) -> list[dict]:
    """Clients of a Redis server blocked in a command (an idle RQ worker waiting for a job)."""
    client = redis.Redis.from_url(server_url)
    try:
        return [entry for entry in client.client_list() if "b" in entry["flags"]]
    finally:
        client.close()


def test_worker_killed_mid_delivery_loses_nothing(engine, factory, receiver, clock, database_url,
                                                   own_redis):  # noqa: F811
    """On a private Redis, so no other worker can take the sweep's wake-up; and only once Redis has dropped
    the killed worker's connection, whose pending wait for a job would otherwise take it."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    receiver.behaviour.delay_seconds = 20  # the receiver holds the request while the worker is killed
    event_id = emit(engine, "webhook.test", institution)

    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url)
    try:
        assert len(receiver.server.wait_for(1, timeout=60)) == 1
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    assert wait_until(lambda: not blocked_clients(own_redis.url), 10), blocked_clients(own_redis.url)

    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.attempts) == ("pending", 0)
    assert delivery.lease_token is not None  # the killed worker still holds its claim
    receiver.behaviour.delay_seconds = 0
    with engine.app_context():
        assert sweep_due_deliveries() == 0  # the claim has not lapsed yet
    clock.move_to(delivery.lease_expires_at + timedelta(seconds=1))  # the killed worker's lease lapses
    with engine.app_context():
        assert sweep_due_deliveries() == 1
    run_worker(engine)

    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    assert [r.headers["X-Karibu-Event-Id"] for r in receiver.requests] == [event_id, event_id]


def test_two_workers_draining_at_once_send_each_event_once(engine, factory, receiver, database_url):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    event_ids = {emit(engine, "webhook.test", institution) for _ in range(120)}
    with engine.app_context():
        Queue("webhooks", connection=redis_connection()).enqueue("jobs.deliveries.drain")  # a second drain
    workers = [start_worker(engine, receiver, database_url, "--burst") for _ in range(2)]
    for worker in workers:
        assert worker.wait(timeout=120) == 0
    assert sorted(r.headers["X-Karibu-Event-Id"] for r in receiver.requests) == sorted(event_ids)
    assert {d.status for d in deliveries(engine, institution)} == {"delivered"}


def test_one_sweep_chain_is_scheduled_and_comes_back_after_a_flush(engine, redis_client):
    with engine.app_context():
        connection = redis_connection()
        assert upkeep.ensure_sweep_scheduled() is True
        assert upkeep.ensure_sweep_scheduled() is False
        registry = ScheduledJobRegistry("webhooks", connection=connection)
        [scheduled] = registry.get_job_ids()
        assert redis_client.get(upkeep.CHAIN_KEY).decode() == scheduled

        redis_client.flushdb()
        assert upkeep.ensure_sweep_scheduled() is True
        assert len(registry.get_job_ids()) == 1


def test_a_sweep_renews_its_chain_and_a_stale_chain_stops(engine, factory, receiver, redis_client):
    institution = factory.institution()
    configure(engine, institution, receiver)
    emit(engine, "webhook.test", institution)
    redis_client.flushdb()
    with engine.app_context():
        connection = redis_connection()
        stale = Queue("webhooks", connection=connection).enqueue("jobs.upkeep.sweep")
        redis_client.set(upkeep.CHAIN_KEY, "another-chain")
    run_worker(engine)  # the stale sweep does nothing
    assert deliveries(engine, institution)[0].status == "pending"
    assert redis_client.get(upkeep.CHAIN_KEY) == b"another-chain"

    with engine.app_context():
        redis_client.set(upkeep.CHAIN_KEY, stale.id)
        Queue("webhooks", connection=connection).enqueue("jobs.upkeep.sweep", job_id=stale.id)
    run_worker(engine)  # the live sweep queues the lost delivery and schedules its successor
    run_worker(engine)
    assert deliveries(engine, institution)[0].status == "delivered"
    with engine.app_context():
        [following] = ScheduledJobRegistry("webhooks", connection=connection).get_job_ids()
    assert redis_client.get(upkeep.CHAIN_KEY).decode() == following != stale.id

