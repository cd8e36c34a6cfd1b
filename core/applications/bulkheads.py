"""Bulkheads: a bounded number of concurrent expensive operations per process, so short requests never wait
behind long ones.

Each kind of expensive work has its own compartment: `search` (text searches and the exact counts of
search and date filters) and `export` (CSV, NDJSON and .xlsx exports, zip bundles of documents). An operation
takes a permit of its kind for as long as it works (a streamed export until its stream is closed); when every
permit is taken it may wait up to BULKHEAD_QUEUE_SECONDS for one (none by default: a waiting request holds a
thread), then is refused with `Overloaded` before it has done anything (nothing started, nothing written). The
API answers that 503 with Retry-After, the portal a plain error page.

The limits are per process (BULKHEAD_SEARCHES, BULKHEAD_EXPORTS; 0 = no limit), so a node runs at most
WEB_CONCURRENCY times as many of each. Every operation also takes a place in the process's shared compartment
(BULKHEAD_EXPENSIVE, by default one less than the worker's threads): however the kinds mix, a worker keeps a
thread for short requests. Nothing here needs Redis.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import prometheus_client
from flask import current_app

from core.config import settings
from core.errors import ServiceUnavailable

KINDS = ("search", "export")
# The compartment every kind also takes a place in.
SHARED = "expensive"

BULKHEAD_REFUSALS = prometheus_client.Counter(
    "karibu_bulkhead_refusals_total", "Expensive operations refused because their bulkhead stayed full",
    ["kind"])


class Overloaded(ServiceUnavailable):
    """Expensive work that cannot run now; retry after `retry_after` seconds. `reason` tells why."""

    reason = "busy"

    def __init__(self, message: str, *, retry_after: int, **extra):
        super().__init__(message, reason=self.reason, **extra)
        self.retry_after = retry_after


BUSY_MESSAGES = {
    "search": "Too many searches are running: retry after the number of seconds in Retry-After",
    "export": "Too many exports are running: retry after the number of seconds in Retry-After",
    SHARED: "Too many searches and exports are running: retry after the number of seconds in Retry-After",
}


class _Compartment:
    """The permits of one kind in this process."""

    def __init__(self, limit: int):
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit) if limit else None

    def take(self, wait: float) -> bool:
        return self._free is None or self._free.acquire(timeout=wait)

    def give_back(self) -> None:
        if self._free is not None:
            self._free.release()


_compartments_lock = threading.Lock()


def _limit(kind: str) -> int:
    config = settings()
    if kind == SHARED:
        return config.BULKHEAD_EXPENSIVE if config.BULKHEAD_EXPENSIVE is not None \
            else max(1, config.KARIBU_THREADS - 1)
    return {"search": config.BULKHEAD_SEARCHES, "export": config.BULKHEAD_EXPORTS}[kind]


def _compartment(kind: str) -> _Compartment:
    """This app's compartment of `kind`, made again when its limit setting changed (permits still held in
    the old one are given back to it)."""
    limit = _limit(kind)
    with _compartments_lock:
        compartments = current_app.extensions.setdefault("karibu_bulkheads", {})
        compartment = compartments.get(kind)
        if compartment is None or compartment.limit != limit:
            compartment = compartments[kind] = _Compartment(limit)
        return compartment


class Permit:
    """Taken places in bulkheads (its kind's and the shared one); `release()` (idempotent, from any thread)
    gives them back."""

    def __init__(self, *compartments: _Compartment):
        self._compartments: tuple[_Compartment, ...] = compartments
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            compartments, self._compartments = self._compartments, ()
        for compartment in compartments:
            compartment.give_back()

    def __del__(self) -> None:  # a holder dropped without closing (a stream never closed) gives it back
        self.release()

    def __enter__(self) -> Permit:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def acquire(kind: str) -> Permit:
    """A permit of `kind`, waiting up to BULKHEAD_QUEUE_SECONDS for one; `Overloaded` when none came free."""
    if kind not in KINDS:
        raise ValueError(f"unknown bulkhead {kind!r}")
    config = settings()
    waiting_until = time.monotonic() + config.BULKHEAD_QUEUE_SECONDS
    taken = []
    for compartment_kind in (kind, SHARED):
        compartment = _compartment(compartment_kind)
        if not compartment.take(max(0.0, waiting_until - time.monotonic())):
            Permit(*taken).release()
            BULKHEAD_REFUSALS.labels(kind).inc()
            raise Overloaded(BUSY_MESSAGES[compartment_kind], retry_after=config.BULKHEAD_RETRY_AFTER_SECONDS)
        taken.append(compartment)
    return Permit(*taken)


@contextmanager
def hold(kind: str):
    """Run the block holding a permit of `kind` (see `acquire`)."""
    with acquire(kind):
        yield
