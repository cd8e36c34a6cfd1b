"""Circuits: a transport that is down for every row (SMTP server, SMS gateway, one webhook endpoint) defers its rows
to the next probe without counting an attempt (docs/architecture.md; docs/webhooks.md and docs/messages.md)."""
from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.metrics import OUTBOX_CIRCUITS_OPEN, OUTBOX_CIRCUITS_OPENED

# How long a row waits for the probe of its circuit to answer before it is deferred to the next probe.
PROBE_WAIT_SECONDS = 5.0
# An open circuit no row has come to probe this long after its probe time (its rows are gone: the endpoint was
# disabled or deleted, the transport's address changed) is no longer counted in karibu_outbox_circuits_open.
UNWATCHED_AFTER_SECONDS = 30.0

GO, PROBE, DEFER = "go", "probe", "defer"


@dataclass(frozen=True)
class Deferred:
    """A row put back without counting an attempt: due again at `until`; `error` says why (for staff).
    `found_down`: its attempt opened the circuit or was a failed probe (the kind may count that against the
    transport, e.g. a webhook endpoint's consecutive failures)."""
    until: datetime
    error: str | None
    found_down: bool = False


def probe_interval(low: float, high: float) -> timedelta:
    """A random pause between `low` and `high` seconds (OUTBOX_PROBE_MIN/MAX_SECONDS), so the workers that
    found a transport down do not all probe it at the same moment."""
    return timedelta(seconds=random.uniform(low, max(low, high)))


class Circuit:
    """One transport: closed (rows go), or open until its next probe (one row probes, the others wait). An
    attempt's answer counts only in the state it began in (`admit`'s `began_in`): the one probe's while open."""

    def __init__(self, key: str):
        self.key = key
        self.kind = key.split(" ", 1)[0]
        self.open_until: datetime | None = None  # None: closed
        self.error: str | None = None
        self.probing = False  # a probe attempt is in flight
        self.state = 0  # changes on each opening, probe admitted, failed probe and closing
        self.counted = False  # in OUTBOX_CIRCUITS_OPEN
        self._unwatched: threading.Timer | None = None
        self._changed = threading.Condition()

    @property
    def is_open(self) -> bool:
        return self.open_until is not None

    def admit(self, now: Callable[[], datetime]) -> tuple[str, datetime | None, int]:
        """(decision, until, began_in). GO: send it, the circuit is closed; PROBE: send it, it is the probe; DEFER:
        put it back until `until` (the next probe, or a moment later while the probe has not answered). `began_in`
        goes back with the attempt's answer (`answered`, `down`, `probe_ended`)."""
        with self._changed:
            if self.open_until is None:
                return GO, None, self.state
            if not self.probing and now() >= self.open_until:
                self.probing = True
                self.state += 1
                self._count(True)
                return PROBE, None, self.state
            if self.probing:  # wait for the probe's answer a short while
                self._changed.wait_for(lambda: not self.probing, timeout=PROBE_WAIT_SECONDS)
                if self.open_until is None:
                    return GO, None, self.state
            return DEFER, self._deferral(now()), self.state

    def probe_ended(self, began_in: int) -> None:
        """The probe ended without saying whether the transport is up (e.g. it was not attempted)."""
        with self._changed:
            if self.probing and began_in == self.state:
                self.probing = False
                self._watch(timedelta(0))
                self._changed.notify_all()

    def answered(self, began_in: int) -> None:
        """The transport answered an attempt: the probe's answer closes the circuit (an attempt begun before it
        opened says nothing of now)."""
        with self._changed:
            if self.open_until is None or began_in != self.state:
                return
            self.open_until, self.error, self.probing = None, None, False
            self.state += 1
            self._count(False)
            self._changed.notify_all()

    def down(self, now: datetime, error: str, pause: timedelta, began_in: int) -> tuple[datetime, bool]:
        """The transport did not answer an attempt. Returns (when its row is due again, whether the failure
        counts: it opened the circuit, `pause` from now, or was the failed probe, the next one `pause` from now).
        The failure of an attempt begun in an earlier state (before the circuit opened, or before the probe closed
        it) changes nothing."""
        with self._changed:
            if began_in != self.state:
                return self._deferral(now), False
            if self.open_until is None:
                OUTBOX_CIRCUITS_OPENED.labels(self.kind).inc()
            self.open_until, self.error, self.probing = now + pause, error, False
            self.state += 1
            self._count(True)
            self._watch(pause)
            self._changed.notify_all()
            return self.open_until, True

    def _deferral(self, now: datetime) -> datetime:
        """When a row not sent now is due again: at the next probe, a moment later while the probe has not
        answered, or at once when the circuit is closed."""
        if self.open_until is None:
            return now
        if self.open_until > now:
            return self.open_until
        return now + timedelta(seconds=PROBE_WAIT_SECONDS)

    def _count(self, counted: bool) -> None:
        """Count the circuit in OUTBOX_CIRCUITS_OPEN or not (then no timer is left to uncount it)."""
        if counted != self.counted:
            OUTBOX_CIRCUITS_OPEN.labels(self.kind).inc(1 if counted else -1)
            self.counted = counted
        if not counted and self._unwatched is not None:
            self._unwatched.cancel()
            self._unwatched = None

    def _watch(self, pause: timedelta) -> None:
        """Uncount the circuit if no probe is admitted within UNWATCHED_AFTER_SECONDS of its probe time."""
        if self._unwatched is not None:
            self._unwatched.cancel()
        self._unwatched = threading.Timer(pause.total_seconds() + UNWATCHED_AFTER_SECONDS, self._uncount_if_still,
                                          args=(self.state,))
        self._unwatched.daemon = True
        self._unwatched.start()

    def _uncount_if_still(self, state: int) -> None:
        """The timer's end: uncounted unless the circuit changed since (a probe came, or it closed)."""
        with self._changed:
            if self.state == state:
                self._count(False)


class Circuits:
    """The circuits of this process, by transport key."""

    def __init__(self):
        self._lock = threading.Lock()
        self._circuits: dict[str, Circuit] = {}

    def of(self, key: str) -> Circuit:
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None:
                circuit = self._circuits[key] = Circuit(key)
            return circuit


circuits = Circuits()
