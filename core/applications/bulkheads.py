"""Bulkheads: a bounded number of concurrent expensive operations (`search`, `export`) per process and per node;
beyond them an operation is refused with `Overloaded` before it starts."""
from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar

import prometheus_client
from flask import current_app

from core.config import settings
from core.errors import ServiceUnavailable

KINDS = ("search", "export")
# The compartments every kind also takes a place in: the process's and the node's.
SHARED = "expensive"
NODE = "node"

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
    NODE: "Too many searches and exports are running: retry after the number of seconds in Retry-After",
}

# How often a request allowed to wait (BULKHEAD_QUEUE_SECONDS) tries the node's lock files again.
_NODE_POLL_SECONDS = 0.01


class _Compartment:
    """The permits of one kind in this process."""

    def __init__(self, limit: int):
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit) if limit else None

    def take(self, wait: float) -> Callable[[], None] | None:
        """What gives the taken place back, or None when no place came free within `wait` seconds."""
        if self._free is None:
            return lambda: None
        return self._free.release if self._free.acquire(timeout=wait) else None


class _NodeCompartment:
    """The places the node's web processes share: `limit` lock files in `directory`, each taken with an
    exclusive, non-blocking `flock` (another open of the same file, in any process or thread, conflicts)."""

    def __init__(self, directory: str, limit: int):
        self.limit = limit
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.paths = [os.path.join(directory, f"expensive-{number}.lock") for number in range(limit)]

    def take(self, wait: float) -> Callable[[], None] | None:
        waiting_until = time.monotonic() + wait
        while True:
            for path in self.paths:
                descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(descriptor)
                    continue
                return lambda: os.close(descriptor)  # closing the file releases its lock
            if time.monotonic() >= waiting_until:
                return None
            time.sleep(_NODE_POLL_SECONDS)


_compartments_lock = threading.Lock()


def _limit(kind: str) -> int:
    config = settings()
    if kind == SHARED:
        return config.BULKHEAD_EXPENSIVE if config.BULKHEAD_EXPENSIVE is not None \
            else max(1, config.KARIBU_THREADS - 1)
    if kind == NODE:
        return config.BULKHEAD_NODE_EXPENSIVE if config.BULKHEAD_NODE_EXPENSIVE is not None \
            else os.cpu_count() or 1
    return {"search": config.BULKHEAD_SEARCHES, "export": config.BULKHEAD_EXPORTS}[kind]


def _compartment(kind: str) -> _Compartment | _NodeCompartment | None:
    """This app's compartment of `kind`, made again when its limit setting changed (permits still held in
    the old one are given back to it); None for the node's when there is no node limit."""
    limit = _limit(kind)
    if kind == NODE:
        directory = settings().BULKHEAD_NODE_DIR
        return _NodeCompartment(directory, limit) if directory and limit else None
    with _compartments_lock:
        compartments = current_app.extensions.setdefault("karibu_bulkheads", {})
        compartment = compartments.get(kind)
        if compartment is None or compartment.limit != limit:
            compartment = compartments[kind] = _Compartment(limit)
        return compartment


class Permit:
    """Taken places in bulkheads (its kind's, the process's shared one and the node's); `release()`
    (idempotent, from any thread) gives them back."""

    def __init__(self, *give_backs: Callable[[], None]):
        self._give_backs: tuple[Callable[[], None], ...] = give_backs
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            give_backs, self._give_backs = self._give_backs, ()
        for give_back in reversed(give_backs):
            give_back()

    def __del__(self) -> None:  # a holder dropped without closing (a stream never closed) gives it back
        self.release()

    def __enter__(self) -> Permit:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


class SharedPlaces:
    """Whether one app context (a request, a job) holds the shared and the node's places: `held`."""

    def __init__(self) -> None:
        self.held = False


# The current app context's, set by the web layer for each one (`wsgi.register_request_state`); None outside.
SHARED_PLACES: ContextVar[SharedPlaces | None] = ContextVar("karibu_shared_places", default=None)


def acquire(kind: str) -> Permit:
    """A permit of `kind`, waiting up to BULKHEAD_QUEUE_SECONDS for one; `Overloaded` when none came free. Inside
    other expensive work of the request only the kind's place is taken."""
    if kind not in KINDS:
        raise ValueError(f"unknown bulkhead {kind!r}")
    config = settings()
    waiting_until = time.monotonic() + config.BULKHEAD_QUEUE_SECONDS
    holder = SHARED_PLACES.get() or SharedPlaces()  # an app made without create_app: no nesting is seen
    nested = holder.held
    taken = []
    try:
        for compartment_kind in (kind,) if nested else (kind, SHARED, NODE):
            compartment = _compartment(compartment_kind)
            if compartment is None:
                continue
            give_back = compartment.take(max(0.0, waiting_until - time.monotonic()))
            if give_back is None:
                BULKHEAD_REFUSALS.labels(kind).inc()
                raise Overloaded(BUSY_MESSAGES[compartment_kind], retry_after=config.BULKHEAD_RETRY_AFTER_SECONDS)
            taken.append(give_back)
    except BaseException:  # refused, or a compartment failed (an OSError on the node's lock files): none kept
        Permit(*taken).release()
        raise
    if not nested:
        holder.held = True
        taken.append(lambda: setattr(holder, "held", False))
    return Permit(*taken)


@contextmanager
def hold(kind: str):
    """Run the block holding a permit of `kind` (see `acquire`)."""
    with acquire(kind):
        yield
