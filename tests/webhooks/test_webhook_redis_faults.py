"""Redis and database faults: a flush, every worker killed, Redis down, stopped or frozen under traffic, a
flag left without its job, the worker's database cut. Due deliveries are still attempted soon after a
worker runs again, because every worker sweeps at each maintenance pass and as soon as a server it waited for
answers again, and an idle worker waits for jobs no longer than that. The first tests run maintenance every
2 s (FAST); the campaign tests run the default settings and count every event written against every one
received, failing on a loss, a repeat, a resumption later than 5 s or a PATCH that waited for more than one
Redis timeout (figures printed with `-s`, recorded in docs/operations.md).

Each test runs real `flask worker` processes against its own redis-server on a free port."""
from __future__ import annotations

import os
import signal
import threading
import time
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
import requests
from sqlalchemy import select, update

from core.db import db
from core.models import Event
from core.models.webhooks import WebhookDelivery
from core.outbox.schedule import SystemClock
from tests.webhooks.conftest import wait_until
from tests.webhooks.test_webhook_engine import configure, deliveries, delivery_for, emit
from tests.conftest import TEST_DB
from tests.ops.processes import Processes, app_environment
from tests.ops.tcp_proxy import TcpProxy
from tests.webhooks.test_webhook_recovery import start_worker

# Minutes of waiting on an outage or a clock: scheduled first, so parallel test workers finish together.
pytestmark = pytest.mark.long_running

FAST = {"WORKER_MAINTENANCE_SECONDS": "2", "WEBHOOK_SWEEP_SECONDS": "1"}
# Generous bounds: these tests prove that recovery happens by itself, not how fast.
RECOVERY_BOUND_SECONDS = 90


def statuses(app, institution) -> list[str]:
    return [delivery.status for delivery in deliveries(app, institution)]


def bring_retry_forward(app, delivery_id: str, seconds: float = 2) -> None:
    """Make a retry scheduled a minute ahead come due in `seconds` (the worker runs on the system clock)."""
    with app.app_context():
        db.session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
                           .values(next_attempt_at=SystemClock().now() + timedelta(seconds=seconds)))
        db.session.commit()


def a_retry_waiting(app, institution, receiver) -> str:
    """One delivery whose first attempt failed (HTTP 500), now waiting for its retry; returns its id."""
    receiver.behaviour.status = 500
    emit(app, "webhook.test", institution)
    assert wait_until(lambda: statuses(app, institution) == ["retry_scheduled"], RECOVERY_BOUND_SECONDS)
    receiver.behaviour.status = 200
    return deliveries(app, institution)[0].id


def stop(worker) -> None:
    os.killpg(worker.pid, signal.SIGKILL)  # the worker and its scheduler process
    worker.wait(timeout=30)


def test_a_retry_coming_due_after_a_redis_flush_is_sent(engine, factory, receiver, database_url, own_redis):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        delivery_id = a_retry_waiting(engine, institution, receiver)
        own_redis.flush()  # the sweep chain, the scheduler's locks, the worker's registration: all gone
        bring_retry_forward(engine, delivery_id)
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)
        assert len(receiver.requests) == 2
    finally:
        stop(worker)


def test_after_every_worker_is_killed_a_new_worker_sends_what_is_due(engine, factory, receiver, database_url,
                                                                      own_redis):
    """The killed worker's scheduler lock outlives it by a minute; the new worker must not wait for it."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    first = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        delivery_id = a_retry_waiting(engine, institution, receiver)
    finally:
        stop(first)
    bring_retry_forward(engine, delivery_id)

    second = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)
        assert len(receiver.requests) == 2
    finally:
        stop(second)


def test_events_written_while_redis_is_down_are_delivered_when_it_returns(engine, factory, receiver,
                                                                          database_url, own_redis):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url, **FAST)
    try:
        emit(engine, "webhook.test", institution)
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)

        own_redis.stop()
        event_id = emit(engine, "webhook.test", institution)  # committed; the wake-up call fails
        assert delivery_for(engine, event_id).status == "pending"

        own_redis.start()  # back, empty
        assert wait_until(lambda: delivery_for(engine, event_id).status == "delivered", 60)
        assert receiver.requests[-1].headers["X-Karibu-Event-Id"] == event_id
    finally:
        stop(worker)


# --- The fault campaign: a running worker and a gunicorn under steady API traffic, Redis stopped or frozen.
# Default worker settings (maintenance every 4 s, probes every 2.5 s at most), as in production.
RESUME_BOUND_SECONDS = 5.0
PATCH_GAP_SECONDS = 0.2
# A PATCH during a freeze pays at most one Redis timeout (REDIS_SOCKET_TIMEOUT, 0.5 s) plus its own work.
PATCH_UNDER_FREEZE_BOUND_SECONDS = 1.25


class Traffic:
    """PATCHes one application's stage back and forth through the API, one every PATCH_GAP_SECONDS, each
    emitting `application.updated`; records (started, seconds) of each."""

    def __init__(self, base: str, key: str, application_id: str, stages: list[str]):
        self.base, self.key, self.application_id, self.stages = base, key, application_id, stages
        self.timings: list[tuple[float, float]] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Traffic":
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        session = requests.Session()
        turn = 0
        while not self._stop.is_set():
            turn += 1
            started = time.monotonic()
            try:
                response = session.patch(
                    f"{self.base}/api/v1/applications/update", timeout=30,
                    headers={"Authorization": f"Bearer {self.key}"},
                    json={"updates": [{"id": self.application_id, "stage": self.stages[turn % 2]}]})
            except requests.RequestException as error:
                self.failures.append(f"{type(error).__name__}: {error}")
                continue
            self.timings.append((started, time.monotonic() - started))
            if response.status_code != 200:
                self.failures.append(f"{response.status_code} {response.text[:200]}")
            time.sleep(PATCH_GAP_SECONDS)

    def between(self, start: float, end: float) -> list[float]:
        return [seconds for started, seconds in self.timings if start <= started < end]


def written_events(app, institution) -> set[str]:
    with app.app_context():
        ids = set(db.session.scalars(select(Event.id).where(Event.institution_id == institution.id,
                                                            Event.type == "application.updated")))
        db.session.rollback()
        return ids


def received_events(receiver) -> list[str]:
    return [request.headers["X-Karibu-Event-Id"] for request in receiver.requests]


def quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(share * len(ordered)) - 1)]


@pytest.fixture
def campaign(engine, factory, receiver, database_url, own_redis, tmp_path):
    """A worker and a gunicorn on the private Redis, an institution whose endpoint takes application.updated;
    yields (base URL, traffic factory, institution)."""
    institution = factory.institution()
    _, key = factory.api_key(institution)
    application = factory.application(institution)
    stages = factory.stages(institution)[:2]
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"), events=["application.updated"])
    processes = Processes(tmp_path)
    try:
        base = processes.gunicorn(app_environment(
            database_url, own_redis.url, tmp_path, SECRET_KEY=engine.config["SECRET_KEY"],
            EMIT_APPLICATION_UPDATED="true", API_RATE_LIMIT="100000/minute", WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
            WEBHOOK_CA_BUNDLE=receiver.ca_path))
        worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url)
        try:
            yield base, (lambda: Traffic(base, key, application.id, stages)), institution
        finally:
            stop(worker)
    finally:
        processes.stop_all()


def settle(engine, institution, receiver, traffic: Traffic) -> None:
    """Every event written was delivered exactly once (within the recovery bound)."""
    assert not traffic.failures, traffic.failures[:3]
    written = written_events(engine, institution)
    assert wait_until(lambda: set(received_events(receiver)) >= written, RECOVERY_BOUND_SECONDS)
    received = received_events(receiver)
    assert sorted(received) == sorted(written)  # nothing lost, nothing sent twice


def resumed_after(engine, institution, receiver, written_before_the_fault: set) -> tuple[float, float]:
    """Called as Redis returns: (seconds until the first event still undelivered arrives, seconds until every
    one of them has). One endpoint gets at most ENDPOINT_SLOTS deliveries at once, so a backlog of a few hundred
    takes a moment longer to clear than to resume. Events were written during the fault (else the measure would
    be empty); if the worker had delivered all of them already, nothing waited: (0, 0)."""
    returned = time.monotonic()
    written = written_events(engine, institution)
    assert written - written_before_the_fault, "no event was written during the fault"
    pending = written - set(received_events(receiver))
    if not pending:
        return 0.0, 0.0
    assert wait_until(lambda: set(received_events(receiver)) & pending, RECOVERY_BOUND_SECONDS)
    resumed = time.monotonic() - returned
    assert wait_until(lambda: set(received_events(receiver)) >= pending, RECOVERY_BOUND_SECONDS)
    return resumed, time.monotonic() - returned


@pytest.mark.latency_bound
def test_redis_stopped_for_a_minute_under_traffic_loses_nothing_and_resumes_within_seconds(
        engine, receiver, own_redis, campaign):
    _, traffic_of, institution = campaign
    with traffic_of() as traffic:
        assert wait_until(lambda: len(receiver.requests) >= 5, 60)  # flowing
        written_before = written_events(engine, institution)
        own_redis.stop()
        stopped = time.monotonic()
        time.sleep(60)
        own_redis.start()  # back, empty: every queued job and flag is gone
        assert not traffic.failures, traffic.failures[:3]
        resumed, caught_up = resumed_after(engine, institution, receiver, written_before)
        during = traffic.between(stopped, stopped + 60)
        time.sleep(3)
    settle(engine, institution, receiver, traffic)
    print(f"\nRedis stopped 60 s: {len(received_events(receiver))} events delivered once each; resumed "
          f"{resumed:.1f} s after Redis returned, caught up after {caught_up:.1f} s; PATCH during the outage p50 "
          f"{quantile(during, .5) * 1000:.0f} ms, max {max(during) * 1000:.0f} ms")
    assert resumed <= RESUME_BOUND_SECONDS


@pytest.mark.latency_bound
def test_redis_frozen_for_20_s_under_traffic_costs_one_timeout_and_resumes_within_seconds(
        engine, receiver, own_redis, campaign):
    _, traffic_of, institution = campaign
    with traffic_of() as traffic:
        assert wait_until(lambda: len(receiver.requests) >= 5, 60)
        before = traffic.between(0, time.monotonic())
        written_before = written_events(engine, institution)
        own_redis.process.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            time.sleep(20)
        finally:
            own_redis.process.send_signal(signal.SIGCONT)
        resumed, caught_up = resumed_after(engine, institution, receiver, written_before)
        during = traffic.between(frozen, frozen + 20)
        time.sleep(3)
    settle(engine, institution, receiver, traffic)
    slow = sum(1 for seconds in during if seconds > 0.4)
    print(f"\nRedis frozen 20 s: {len(received_events(receiver))} events delivered once each; resumed "
          f"{resumed:.1f} s after Redis returned, caught up after {caught_up:.1f} s; PATCH before p50 "
          f"{quantile(before, .5) * 1000:.0f} ms; during "
          f"the freeze p50 {quantile(during, .5) * 1000:.0f} ms, p95 {quantile(during, .95) * 1000:.0f} ms, "
          f"max {max(during) * 1000:.0f} ms, {slow} of {len(during)} over 400 ms")
    assert max(during) <= PATCH_UNDER_FREEZE_BOUND_SECONDS
    assert quantile(during, .5) <= quantile(before, .5) + 0.1  # most requests skip Redis altogether
    assert resumed <= RESUME_BOUND_SECONDS


def test_a_drain_flag_without_its_job_does_not_hold_up_the_sweep(engine, factory, receiver, database_url,
                                                                 own_redis):
    """A flag left behind (its job taken by a worker killed before the drain started, or lost) is ignored by
    the sweep, which checks that the flagged job is really queued: the delivery goes out at the next
    maintenance pass (4 s), not when the flag's 30 s expire."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url)
    try:
        emit(engine, "webhook.test", institution)
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)
        client = redis.Redis.from_url(own_redis.url)
        client.set("karibu:webhooks:drain-queued", "a-job-that-is-not-queued", ex=30)
        emitted = time.monotonic()
        event_id = emit(engine, "webhook.test", institution)  # its wake-up call obeys the flag
        assert wait_until(lambda: delivery_for(engine, event_id).status == "delivered", 30)
        assert time.monotonic() - emitted < 10
        client.close()
    finally:
        stop(worker)


@pytest.mark.skipif(TEST_DB != "postgres", reason="the database is stopped by cutting its TCP connection")
def test_the_database_cut_for_20_s_under_the_worker_loses_nothing_and_resumes_within_seconds(
        engine, factory, receiver, database_url, own_redis):
    """The worker's PostgreSQL connections go through a proxy that is closed for 20 s while events keep being
    written (one every 0.2 s, by this test's own connection): all are delivered once, within seconds of the
    port opening again."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    parts = urlsplit(database_url)
    proxy = TcpProxy(parts.hostname, parts.port or 5432).start()
    proxied = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
    worker = start_worker(engine, receiver, proxied, redis_url=own_redis.url)
    emitted: list[str] = []
    try:
        emitted.append(emit(engine, "webhook.test", institution))
        assert wait_until(lambda: statuses(engine, institution) == ["delivered"], RECOVERY_BOUND_SECONDS)
        proxy.stop()
        cut = time.monotonic()
        while time.monotonic() - cut < 20:
            emitted.append(emit(engine, "webhook.test", institution))
            time.sleep(0.2)
        proxy.start()  # same port
        returned = time.monotonic()
        pending = set(emitted) - set(received_events(receiver))
        assert wait_until(lambda: set(received_events(receiver)) & pending, RECOVERY_BOUND_SECONDS)
        resumed = time.monotonic() - returned
        assert wait_until(lambda: set(received_events(receiver)) >= set(emitted), RECOVERY_BOUND_SECONDS)
        caught_up = time.monotonic() - returned
        assert worker.poll() is None
    finally:
        stop(worker)
        proxy.stop()
    assert sorted(received_events(receiver)) == sorted(emitted)  # nothing lost, nothing sent twice
    print(f"\nPostgreSQL cut 20 s: {len(emitted)} events delivered once each; resumed {resumed:.1f} s after it "
          f"returned, caught up after {caught_up:.1f} s")
    assert resumed <= RESUME_BOUND_SECONDS
