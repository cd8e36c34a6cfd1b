"""Drain fairness: a receiver that takes 10 s holds one sender slot, never the deliveries of others.

Asserted on delivery times with generous margins (this is not a timing benchmark): the fast endpoint's
deliveries arrive within a few seconds while the slow endpoint is still holding its requests, which would
take 10 s or more if a drain sent in lockstep batches.
"""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from core.webhooks.delivery import drain_due_deliveries
from tests.webhooks.test_webhook_engine import configure, deliveries, emit
from tests.webhooks.webhook_receiver import Receiver

pytestmark = [pytest.mark.long_running, pytest.mark.latency_bound]

SLOW_SECONDS = 10.0
# Far below SLOW_SECONDS, far above what the fast deliveries need even on a busy two-core machine.
FAST_ENOUGH_SECONDS = 6.0


@pytest.fixture
def slow_receiver(receiver, tmp_path):
    """A second HTTPS receiver (same CA as `receiver`) that answers only after SLOW_SECONDS."""
    directory = tmp_path / "slow"
    directory.mkdir()
    running = Receiver(directory, ca=receiver.ca).start()
    running.behaviour.delay_seconds = SLOW_SECONDS
    yield running
    running.stop()


def drain_in_background(app) -> threading.Thread:
    def drain():
        with app.app_context():
            drain_due_deliveries()

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread


def test_a_slow_endpoint_does_not_hold_up_the_deliveries_of_another_institution(engine, factory, receiver,
                                                                                 slow_receiver):
    slow, fast = factory.institution(), factory.institution()
    configure(engine, slow, slow_receiver)
    configure(engine, fast, receiver)
    for _ in range(3):  # the oldest due deliveries: claimed first
        emit(engine, "webhook.test", slow)
    for _ in range(40):  # more than the sender slots left: lockstep batches would wait for the slow ones
        emit(engine, "webhook.test", fast)

    started = time.monotonic()
    drain = drain_in_background(engine)
    arrived = receiver.server.wait_for(40, timeout=SLOW_SECONDS * 2)
    assert len(arrived) == 40
    assert max(request.received_at for request in arrived) - started < FAST_ENOUGH_SECONDS
    assert len(slow_receiver.server.wait_for(3, timeout=5)) == 3  # the slow ones were being sent all along
    drain.join(timeout=SLOW_SECONDS * 3)
    assert not drain.is_alive()
    assert time.monotonic() - started >= SLOW_SECONDS * 0.9  # the drain did wait for the slow receiver
    assert {d.status for d in deliveries(engine, fast)} == {"delivered"}
    # answered at about the 10 s deadline: delivered or timed out, never lost or left leased
    assert {d.status for d in deliveries(engine, slow)} <= {"delivered", "retry_scheduled"}
    assert all(d.lease_token is None for d in deliveries(engine, slow))


def test_deliveries_due_while_a_slow_receiver_holds_a_slot_are_sent_at_once(engine, factory, receiver,
                                                                            slow_receiver):
    slow, fast = factory.institution(), factory.institution()
    configure(engine, slow, slow_receiver)
    configure(engine, fast, receiver)
    emit(engine, "webhook.test", slow)
    drain = drain_in_background(engine)
    assert len(slow_receiver.server.wait_for(1, timeout=5)) == 1  # the slow attempt is in flight

    emitted_at = time.monotonic()
    for _ in range(20):  # the running drain, not a new one, picks these up
        emit(engine, "webhook.test", fast)
    arrived = receiver.server.wait_for(20, timeout=SLOW_SECONDS * 2)
    assert len(arrived) == 20
    assert max(request.received_at for request in arrived) - emitted_at < FAST_ENOUGH_SECONDS
    assert drain.is_alive()  # still waiting for the slow receiver
    drain.join(timeout=SLOW_SECONDS * 3)
    assert {d.status for d in deliveries(engine, fast)} == {"delivered"}


def test_both_endpoints_failing_fast_and_slow_keep_their_own_counts(engine, factory, receiver, slow_receiver):
    """The held-back path near the disable threshold still serves other endpoints meanwhile."""
    slow, fast = factory.institution(), factory.institution()
    configure(engine, slow, slow_receiver)
    configure(engine, fast, receiver)
    slow_receiver.behaviour.delay_seconds = 2.0
    slow_receiver.behaviour.status = 503
    receiver.behaviour.status = 503
    for _ in range(25):
        emit(engine, "webhook.test", fast)
    for _ in range(2):
        emit(engine, "webhook.test", slow)
    with engine.app_context():
        drain_due_deliveries()
    assert len(receiver.requests) == 20  # exactly the 20th failure disabled the endpoint
    assert {d.status for d in deliveries(engine, fast)} == {"endpoint_disabled"}
    assert len(slow_receiver.requests) == 2
    assert {d.status for d in deliveries(engine, slow)} == {"retry_scheduled"}


# A real worker beside a 9 s receiver: the other institution's p95 lag stays within twice its lag alone.
NINE_SECONDS = 9.0
STEADY_EVENTS = 30
STEADY_GAP_SECONDS = 0.2
# Below this a p95 is noise on a shared two-core machine (a scheduler hiccup): the 2x bound starts from it.
LAG_FLOOR_SECONDS = 0.25


def steady_lags(engine, institution, receiver) -> list[float]:
    """Emit STEADY_EVENTS events one every STEADY_GAP_SECONDS and return each one's delivery lag (seconds
    from its commit to its arrival), failing on a loss or a repeat."""
    emitted: dict[str, float] = {}
    already = len(receiver.requests)
    for _ in range(STEADY_EVENTS):
        event_id = emit(engine, "webhook.test", institution)
        emitted[event_id] = time.monotonic()
        time.sleep(STEADY_GAP_SECONDS)
    arrived = receiver.server.wait_for(already + STEADY_EVENTS, timeout=60)[already:]
    ids = [request.headers["X-Karibu-Event-Id"] for request in arrived]
    assert sorted(ids) == sorted(emitted)  # every event once: nothing lost, nothing repeated
    return [request.received_at - emitted[request.headers["X-Karibu-Event-Id"]] for request in arrived]


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


# How late a request's `received_at` can be taken after the worker sent it, on a loaded machine: the next
# request to the endpoint starts only once an answer came back, yet may be stamped less than `seconds` after
# a late-stamped one.
RECEIVED_AT_SLACK_SECONDS = 0.5


def most_at_once(requests, seconds: float) -> int:
    """The most requests a receiver that answers after `seconds` held at the same time."""
    times = sorted(request.received_at for request in requests)
    held = seconds - RECEIVED_AT_SLACK_SECONDS
    return max((sum(1 for other in times if moment - held < other <= moment) for moment in times), default=0)


def test_a_nine_second_receiver_keeps_another_institutions_lag_within_twice_its_lag_alone(
        engine, factory, receiver, slow_receiver, database_url, own_redis):
    from core.webhooks.delivery import ENDPOINT_SLOTS
    from tests.webhooks.test_webhook_recovery import start_worker

    slow, fast = factory.institution(), factory.institution()
    configure(engine, slow, slow_receiver, url=slow_receiver.url("127.0.0.1"))
    configure(engine, fast, receiver, url=receiver.url("127.0.0.1"))
    slow_receiver.behaviour.delay_seconds = NINE_SECONDS
    worker = start_worker(engine, receiver, database_url, redis_url=own_redis.url)
    try:
        emit(engine, "webhook.test", fast)
        assert len(receiver.server.wait_for(1, timeout=60)) == 1  # the worker is up
        alone = p95(steady_lags(engine, fast, receiver))

        slow_events = [emit(engine, "webhook.test", slow) for _ in range(3 * ENDPOINT_SLOTS)]
        assert len(slow_receiver.server.wait_for(ENDPOINT_SLOTS, timeout=30)) >= ENDPOINT_SLOTS
        beside = p95(steady_lags(engine, fast, receiver))
        print(f"fast p95 lag alone {alone:.3f} s, beside a {NINE_SECONDS:.0f} s receiver {beside:.3f} s")
        assert beside <= 2 * max(alone, LAG_FLOOR_SECONDS)

        arrived = slow_receiver.server.wait_for(len(slow_events), timeout=4 * NINE_SECONDS + 30)
        assert sorted(r.headers["X-Karibu-Event-Id"] for r in arrived) == sorted(slow_events)
        assert most_at_once(arrived, NINE_SECONDS) <= ENDPOINT_SLOTS
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
