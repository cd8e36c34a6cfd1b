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
    def __init__(self, key: str):
        self.key = key
        self.kind = key.split(" ", 1)[0]
        self.open_until: datetime | None = None  # None: closed
        self.error: str | None = None
        self.probing = False  # a probe attempt is in flight
        self._changed = threading.Condition()

    @property
    def is_open(self) -> bool:
        return self.open_until is not None

    def admit(self, now: Callable[[], datetime]) -> tuple[str, datetime | None]:
        """(GO, None): send it, the circuit is closed; (PROBE, None): send it, it is the probe; (DEFER, until):
        put it back until then (the next probe, or a moment later while the probe has not answered)."""
        with self._changed:
            if self.open_until is None:
                return GO, None
            if not self.probing and now() >= self.open_until:
                self.probing = True
                return PROBE, None
            if self.probing:  # wait for the probe's answer a short while
                self._changed.wait_for(lambda: not self.probing, timeout=PROBE_WAIT_SECONDS)
                if self.open_until is None:
                    return GO, None
            current = now()
            if self.open_until > current:
                return DEFER, self.open_until
            return DEFER, current + timedelta(seconds=PROBE_WAIT_SECONDS)

    def probe_ended(self) -> None:
        """The probe ended without saying whether the transport is up (e.g. it was not attempted)."""
        with self._changed:
            self.probing = False
            self._changed.notify_all()

    def answered(self) -> None:
        """The transport answered (about the row): the circuit closes."""
        with self._changed:
            if self.open_until is not None:
                OUTBOX_CIRCUITS_OPEN.labels(self.kind).dec()
            self.open_until, self.error, self.probing = None, None, False
            self._changed.notify_all()

    def down(self, now: datetime, error: str, pause: timedelta) -> tuple[datetime, bool]:
        """The transport did not answer: (re)open until the next probe, `pause` from now unless a probe time
        is already set ahead. Returns (the probe time, whether this failure opened the circuit or was a failed
        probe, as opposed to one more attempt that was already under way)."""
        with self._changed:
            finding = self.open_until is None or self.probing
            if self.open_until is None:
                OUTBOX_CIRCUITS_OPENED.labels(self.kind).inc()
                OUTBOX_CIRCUITS_OPEN.labels(self.kind).inc()
            if self.open_until is None or self.probing or self.open_until <= now:
                self.open_until = now + pause
            self.error, self.probing = error, False
            self._changed.notify_all()
            return self.open_until, finding


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
