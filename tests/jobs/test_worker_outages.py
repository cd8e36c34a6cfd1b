"""A real worker process outlives a Redis or database outage and goes back to work by itself afterwards."""
from __future__ import annotations

import os
import signal
import time
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TEST_DB
from tests.ops.processes import free_port
from tests.ops.tcp_proxy import TcpProxy
from tests.webhooks.conftest import (  # noqa: F401
    clock,
    delivering,
    engine,
    own_redis,
    receiver,
    resolver,
    wait_until,
)
from tests.webhooks.test_webhook_engine import configure, deliveries, emit
from tests.webhooks.test_webhook_recovery import start_worker

# Minutes of waiting on an outage or a clock: scheduled first, so parallel test workers finish together.
pytestmark = pytest.mark.long_running

OUTAGE_SECONDS = 12
# The back-off is capped at 15 s; the worker's next attempt falls at most that long after Redis returns.
RECOVERY_BOUND_SECONDS = 25


def connection_failures(metrics_url: str, dependency: str) -> float:
    text = requests.get(metrics_url, timeout=5).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (sample.name == "karibu_worker_connection_failures_total"
                    and sample.labels.get("dependency") == dependency):
                return sample.value
    return 0.0


def test_worker_outlives_a_redis_outage_and_resumes_by_itself(engine, factory, receiver, own_redis,  # noqa: F811
                                                               database_url):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    metrics_port = free_port()
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url,
                          WORKER_METRICS_PORT=str(metrics_port), WORKER_MAINTENANCE_SECONDS="2")
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        emit(engine, "webhook.test", institution)
        assert wait_until(lambda: [d.status for d in deliveries(engine, institution)] == ["delivered"], 30)
        assert connection_failures(metrics_url, "redis") == 0

        own_redis.stop()
        time.sleep(OUTAGE_SECONDS)
        assert worker.poll() is None, "the worker process ended during the Redis outage"
        failures_during_outage = connection_failures(metrics_url, "redis")
        assert failures_during_outage >= 3  # 0.5, 1, 2, 4… s apart: several attempts in 12 s

        own_redis.start()  # same port, empty: the queued job is gone, only the worker's sweep can find it
        returned = time.monotonic()
        emit(engine, "webhook.test", institution)
        assert wait_until(lambda: [d.status for d in deliveries(engine, institution)] == ["delivered"] * 2,
                          RECOVERY_BOUND_SECONDS), "the worker did not go back to work after Redis returned"
        print(f"\nwork resumed {time.monotonic() - returned:.1f} s after Redis returned")
        assert worker.poll() is None
        assert connection_failures(metrics_url, "redis") >= failures_during_outage
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)


@pytest.mark.skipif(TEST_DB != "postgres", reason="the database is stopped by cutting its TCP connection")
def test_worker_outlives_a_database_outage_and_resumes_by_itself(engine, factory, receiver, own_redis,  # noqa: F811
                                                                  database_url):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    parts = urlsplit(database_url)
    proxy = TcpProxy(parts.hostname, parts.port or 5432).start()
    proxied = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
    metrics_port = free_port()
    worker = start_worker(engine, receiver, proxied, redis_url=own_redis.url,
                          WORKER_METRICS_PORT=str(metrics_port), WORKER_MAINTENANCE_SECONDS="2")
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        emit(engine, "webhook.test", institution)
        assert wait_until(lambda: [d.status for d in deliveries(engine, institution)] == ["delivered"], 30)

        proxy.stop()  # the worker's connections are cut and no new one gets through
        time.sleep(OUTAGE_SECONDS)
        assert worker.poll() is None, "the worker process ended during the database outage"
        assert connection_failures(metrics_url, "database") >= 3

        emit(engine, "webhook.test", institution)  # written directly (the test's own connection still works)
        proxy.start()  # same port: the database is back for the worker
        assert wait_until(lambda: [d.status for d in deliveries(engine, institution)] == ["delivered"] * 2,
                          RECOVERY_BOUND_SECONDS), "the worker did not go back to work after the database returned"
        assert worker.poll() is None
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)
        proxy.stop()


def test_during_a_redis_outage_the_worker_wakes_its_own_lane_for_rows_due(
        engine, factory, receiver, own_redis, database_url):  # noqa: F811
    """No drain job can reach the worker while Redis is down: its own sweep finds the rows due and wakes its lane,
    so deliveries go on with PostgreSQL alone."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url)
    try:
        emit(engine, "webhook.test", institution)
        assert wait_until(lambda: [d.status for d in deliveries(engine, institution)] == ["delivered"], 30)
        time.sleep(2)  # its drain has ended: the lane waits to be woken

        own_redis.stop()
        time.sleep(2)
        emit(engine, "webhook.test", institution)  # written with its wake-up lost (Redis refuses it)
        written = time.monotonic()
        assert wait_until(lambda: [d.status for d in deliveries(engine, institution)] == ["delivered"] * 2, 30), \
            "a delivery due during the Redis outage waited for Redis"
        print(f"\ndelivered {time.monotonic() - written:.1f} s after it was written, Redis still down")
        assert own_redis.process is None and worker.poll() is None
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
