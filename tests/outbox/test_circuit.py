"""`Circuit` itself: one probe at a time while open, and only the probe's answer moves the circuit; an attempt begun
in an earlier state (before the circuit opened, or before the probe closed it) changes nothing. The gauge
karibu_outbox_circuits_open counts an open circuit until no row comes to probe it."""
from __future__ import annotations

import secrets
import threading
import time
from datetime import datetime, timedelta

import prometheus_client
import pytest

from core.outbox import circuit as circuit_module
from core.outbox.circuit import DEFER, GO, PROBE, Circuit

PAUSE = timedelta(seconds=20)


class Clock:
    def __init__(self):
        self.current = datetime(2026, 3, 1, 8, 0, 0)

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def circuit(monkeypatch) -> Circuit:
    """A circuit of a kind of its own (its gauge starts at nothing); a row waits 0.2 s for the probe's answer."""
    monkeypatch.setattr(circuit_module, "PROBE_WAIT_SECONDS", 0.2)
    return Circuit(f"unit{secrets.token_hex(4)} transport:25")


def gauge(circuit: Circuit) -> float:
    return prometheus_client.REGISTRY.get_sample_value("karibu_outbox_circuits_open", {"kind": circuit.kind}) or 0


def opened(circuit: Circuit, clock: Clock) -> tuple[datetime, int]:
    """Open `circuit` by a failed attempt; returns its probe time and the state the circuit is now in."""
    admitted, _, began_in = circuit.admit(clock.now)
    assert admitted == GO
    probe_at, counted = circuit.down(clock.now(), "connection refused", PAUSE, began_in)
    assert counted and circuit.is_open and probe_at == clock.now() + PAUSE
    return probe_at, circuit.state


def test_a_failure_opens_the_circuit_and_the_rows_wait_for_the_probe_time(circuit, clock):
    probe_at, _ = opened(circuit, clock)
    assert circuit.error == "connection refused" and gauge(circuit) == 1
    assert circuit.admit(clock.now)[:2] == (DEFER, probe_at)
    clock.advance(PAUSE.total_seconds())
    assert circuit.admit(clock.now)[0] == PROBE


def test_one_probe_at_a_time_the_others_wait_for_its_answer(circuit, clock):
    opened(circuit, clock)
    clock.advance(PAUSE.total_seconds())
    _, _, probe = circuit.admit(clock.now)
    started = time.monotonic()
    admitted, until, _ = circuit.admit(clock.now)  # the probe has not answered within the wait: put back
    assert (admitted, until) == (DEFER, clock.now() + timedelta(seconds=circuit_module.PROBE_WAIT_SECONDS))
    assert time.monotonic() - started >= 0.15
    waiting = []
    thread = threading.Thread(target=lambda: waiting.append(circuit.admit(clock.now)))
    thread.start()
    time.sleep(0.05)
    circuit.answered(probe)  # the probe's answer: the row waiting for it goes at once
    thread.join(5)
    assert waiting[0][0] == GO and not circuit.is_open and gauge(circuit) == 0


def test_a_failed_probe_counts_and_sets_the_next_probe_time(circuit, clock):
    opened(circuit, clock)
    clock.advance(PAUSE.total_seconds())
    _, _, probe = circuit.admit(clock.now)
    next_probe, counted = circuit.down(clock.now(), "still refused", timedelta(seconds=25), probe)
    assert counted and next_probe == clock.now() + timedelta(seconds=25) and circuit.error == "still refused"
    assert circuit.admit(clock.now)[:2] == (DEFER, next_probe)
    clock.advance(25)
    assert circuit.admit(clock.now)[0] == PROBE


def test_a_failure_begun_before_the_circuit_opened_is_not_the_probes_answer(circuit, clock):
    """The review's case: it let a second probe through while the first was still in flight."""
    _, _, earlier = circuit.admit(clock.now)  # under way (a 10 s connect timeout) while another opens the circuit
    probe_at, _ = opened(circuit, clock)
    clock.advance(PAUSE.total_seconds() + 1)
    admitted, _, probe = circuit.admit(clock.now)
    assert admitted == PROBE

    until, counted = circuit.down(clock.now(), "timed out", PAUSE, earlier)
    assert not counted  # not a failed probe: the endpoint's failures do not grow
    assert until == clock.now() + timedelta(seconds=circuit_module.PROBE_WAIT_SECONDS)  # waits for the probe
    assert circuit.probing and circuit.open_until == probe_at and circuit.error == "connection refused"
    assert circuit.admit(clock.now)[0] == DEFER  # no second probe while the first is in flight

    circuit.answered(probe)
    assert not circuit.is_open and circuit.admit(clock.now)[0] == GO


def test_a_failure_begun_before_the_circuit_opened_leaves_its_probe_time(circuit, clock):
    _, _, earlier = circuit.admit(clock.now)
    probe_at, _ = opened(circuit, clock)
    clock.advance(5)
    assert circuit.down(clock.now(), "refused too", PAUSE, earlier) == (probe_at, False)
    clock.advance(PAUSE.total_seconds())  # the probe time has come and no probe was admitted yet
    assert circuit.down(clock.now(), "refused too", PAUSE, earlier)[1] is False
    assert circuit.open_until == probe_at and circuit.admit(clock.now)[0] == PROBE


def test_an_answer_begun_before_the_circuit_opened_does_not_close_it(circuit, clock):
    _, _, earlier = circuit.admit(clock.now)
    probe_at, _ = opened(circuit, clock)
    circuit.answered(earlier)
    assert circuit.is_open and circuit.admit(clock.now)[:2] == (DEFER, probe_at) and gauge(circuit) == 1


def test_a_failure_begun_before_the_probe_closed_the_circuit_does_not_open_it_again(circuit, clock):
    _, _, earlier = circuit.admit(clock.now)  # under way while the circuit opens, is probed and closes
    opened(circuit, clock)
    clock.advance(PAUSE.total_seconds())
    _, _, probe = circuit.admit(clock.now)
    circuit.answered(probe)
    assert circuit.down(clock.now(), "late refusal", PAUSE, earlier) == (clock.now(), False)  # due again at once
    assert not circuit.is_open and gauge(circuit) == 0
    _, _, now_begun = circuit.admit(clock.now)
    assert circuit.down(clock.now(), "refused again", PAUSE, now_begun)[1]  # an attempt begun now: down again
    assert circuit.is_open and gauge(circuit) == 1


def test_a_probe_that_was_not_attempted_lets_the_next_row_probe(circuit, clock):
    opened(circuit, clock)
    clock.advance(PAUSE.total_seconds())
    _, _, probe = circuit.admit(clock.now)
    circuit.probe_ended(probe)
    assert circuit.admit(clock.now)[0] == PROBE


def test_an_open_circuit_no_row_comes_to_probe_is_no_longer_counted(circuit, clock, monkeypatch):
    """Its rows are gone (the endpoint was disabled or deleted): the gauge clears, and counts it again as soon
    as a row comes to probe it."""
    monkeypatch.setattr(circuit_module, "UNWATCHED_AFTER_SECONDS", 0.3)
    admitted, _, began_in = circuit.admit(clock.now)
    circuit.down(clock.now(), "connection refused", timedelta(seconds=0.2), began_in)
    assert gauge(circuit) == 1
    deadline = time.monotonic() + 10
    while gauge(circuit) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gauge(circuit) == 0 and circuit.is_open  # still open: a row that comes later probes first
    clock.advance(1)
    admitted, _, probe = circuit.admit(clock.now)
    assert admitted == PROBE and gauge(circuit) == 1
    circuit.answered(probe)
    assert gauge(circuit) == 0


def test_a_circuit_probed_in_time_stays_counted(circuit, clock, monkeypatch):
    monkeypatch.setattr(circuit_module, "UNWATCHED_AFTER_SECONDS", 0.3)
    _, _, began_in = circuit.admit(clock.now)
    circuit.down(clock.now(), "connection refused", timedelta(seconds=0.2), began_in)  # uncounted 0.5 s from now
    clock.advance(1)
    _, _, probe = circuit.admit(clock.now)
    time.sleep(1)  # the probe is still in flight
    assert gauge(circuit) == 1
    circuit.down(clock.now(), "still refused", PAUSE, probe)  # next probe in 20 s
    time.sleep(0.6)
    assert gauge(circuit) == 1
