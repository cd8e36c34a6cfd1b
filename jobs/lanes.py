"""Drain lanes: in a worker process each outbox drains on a thread of its own, woken by its drain job; the drain of
an outbox, as a job or in a lane, written once for every kind (`OutboxLane`; docs/architecture.md)."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from flask import Flask

from core.db import discard_session
from core.outbox.drain import DrainResult
from core.outbox.wakeup import DrainSignal
from core.queue import enqueue
from core.redis_faults import record_redis_fault

log = logging.getLogger(__name__)

# How many times a wake-up goes on to another worker while the lanes it reaches are all draining already.
PASS_ON_HOPS = 2
# After a drain failed (e.g. the database went away), the lane waits this long before it drains again.
PAUSE_AFTER_FAILURE_SECONDS = 1.0

_lanes: dict[str, "Lane"] = {}


class Lane:
    """One thread draining one outbox whenever it is woken. `drain` returns True when rows are still due."""

    def __init__(self, name: str, drain: Callable[[], bool], app: Flask):
        self.name, self._drain, self._app = name, drain, app
        self._woken = threading.Event()
        self._stopping = False
        self.draining = False
        self._thread = threading.Thread(target=self._run, name=f"{name}-lane", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._woken.set()

    def stop(self, timeout: float) -> None:
        """Finish the drain in progress and any it was woken for, then end (waits up to `timeout`)."""
        self._stopping = True
        self._woken.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        more_due = False
        while True:
            if not more_due:
                self._woken.wait()
                self._woken.clear()
            self.draining = True
            try:
                more_due = self._drain_once()
            finally:
                self.draining = False
            if self._stopping and not self._woken.is_set():
                return

    def _drain_once(self) -> bool:
        with self._app.app_context():
            try:
                return self._drain()
            except Exception:
                log.exception("%s drain failed; the lane drains again when woken", self.name)
                time.sleep(PAUSE_AFTER_FAILURE_SECONDS)
                return False
            finally:
                discard_session()


def start_lanes(app: Flask, drains: dict[str, Callable[[], bool]]) -> None:
    """Start one lane per outbox of this worker process (`drains`: name → drain function)."""
    for name, drain in drains.items():
        lane = _lanes[name] = Lane(name, drain, app)
        lane.start()


def stop_lanes(timeout: float) -> None:
    for name in list(_lanes):
        _lanes.pop(name).stop(timeout)


def wake(name: str, queue_name: str, job: str, hops: int) -> bool:
    """Wake this process's lane `name` (already draining: requeue the job, `hops` + 1, below PASS_ON_HOPS);
    False when this process has no such lane (the caller drains itself)."""
    lane = _lanes.get(name)
    if lane is None:
        return False
    busy = lane.draining
    lane.wake()
    if busy and hops < PASS_ON_HOPS:
        enqueue(queue_name, job, hops + 1, result_ttl=0, failure_ttl=86400)
    return True


def without_raising(redis_step: Callable[[], object]) -> None:
    """A lane's Redis step (`DrainSignal.started`, a wake-up for other workers) with a Redis failure recorded instead
    of raised: the lane drains without Redis, and the sweep wakes the other workers later."""
    try:
        redis_step()
    except Exception as error:
        record_redis_fault("queue", error)


@dataclass(frozen=True)
class OutboxLane:
    """One outbox as a worker drains it: its wake-up signal (named as the lane) and its drain, a function
    `(on_backlog=...) -> DrainResult`."""

    signal: DrainSignal
    drain: Callable[..., DrainResult]

    @property
    def name(self) -> str:
        return self.signal.name

    def job(self, hops: int = 0) -> int:
        """The drain job: wakes this worker's lane; where there is none, drains here and returns how many attempts
        were made. `hops`: how many workers passed this wake-up on already."""
        if wake(self.name, self.signal.queue_name, self.signal.job, hops):
            return 0
        self.signal.started()
        result = self.drain(on_backlog=self.signal.signal_quietly)
        if result.more_due:
            self.signal.signal()
        return len(result.attempts)

    def drain_once(self) -> bool:
        """One drain of the lane; True when rows are still due (the lane drains again at once)."""
        without_raising(self.signal.started)
        return self.drain(on_backlog=self.signal.signal_quietly).more_due
