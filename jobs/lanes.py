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
from core.outbox.leases import Outbox, count_due
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
    """One thread draining one outbox whenever it is woken. `drain(stop)` drains until nothing is due or `stop` is
    set, and returns True when rows are still due."""

    def __init__(self, name: str, drain: Callable[[threading.Event], bool], app: Flask,
                 outbox: Outbox | None = None):
        self.name, self._drain, self._app, self.outbox = name, drain, app, outbox
        self._woken = threading.Event()
        self._stop = threading.Event()
        self._finishing = False  # end once nothing is due (a burst worker's end)
        self.draining = False
        self._thread = threading.Thread(target=self._run, name=f"{name}-lane", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._woken.set()

    def stop_claiming(self) -> None:
        """From now on the lane claims nothing: its drain releases the rows not started and finishes those in
        flight; an idle lane ends at once."""
        self._stop.set()
        self._woken.set()

    def finish(self) -> None:
        """Drain what is due now, then end (the lane's drain is not cut short)."""
        self._finishing = True
        self._woken.set()

    def join(self, timeout: float | None) -> bool:
        """Wait up to `timeout` for the lane to end; True when it did."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        more_due = False
        while not self._stop.is_set():
            if not more_due:
                self._woken.wait()
                self._woken.clear()
                if self._stop.is_set():
                    return
            self.draining = True
            try:
                more_due = self._drain_once()
            finally:
                self.draining = False
            if self._finishing and not more_due and not self._woken.is_set():
                return

    def _drain_once(self) -> bool:
        with self._app.app_context():
            try:
                return self._drain(self._stop)
            except Exception:
                log.exception("%s drain failed; the lane drains again when woken", self.name)
                self._stop.wait(PAUSE_AFTER_FAILURE_SECONDS)
                return False
            finally:
                discard_session()


def start_lanes(app: Flask, outboxes: list["OutboxLane"]) -> None:
    """Start one lane per outbox of this worker process."""
    for outbox in outboxes:
        lane = _lanes[outbox.name] = Lane(outbox.name, outbox.drain_once, app, outbox.outbox)
        lane.start()


def stop_claiming() -> None:
    """Every lane of this process stops claiming (at once, in parallel); see `stop_lanes`."""
    for lane in list(_lanes.values()):
        lane.stop_claiming()


def stop_lanes(timeout: float) -> None:
    """Stop every lane at once and wait, up to `timeout` in all, for their sends in flight to be recorded."""
    stop_claiming()
    deadline = time.monotonic() + timeout
    for name in list(_lanes):
        if not _lanes.pop(name).join(max(0.0, deadline - time.monotonic())):
            log.warning("the %s lane was still sending after %.0f s; its leases lapse by themselves", name, timeout)


def finish_lanes() -> None:
    """A burst worker's end: every lane drains what is due (as the drain jobs asked), then ends."""
    for lane in list(_lanes.values()):
        lane.finish()
    for name in list(_lanes):
        _lanes.pop(name).join(None)


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


def wake_lanes_with_due_rows() -> None:
    """Without Redis (no drain job can reach this process): wake each idle lane whose outbox has rows due."""
    for lane in list(_lanes.values()):
        if lane.draining or lane.outbox is None:
            continue
        try:
            due = count_due(lane.outbox)
        finally:
            discard_session()
        if due:
            lane.wake()


def without_raising(redis_step: Callable[[], object]) -> None:
    """A lane's Redis step (`DrainSignal.started`, a wake-up for other workers) with a Redis failure recorded instead
    of raised: the lane drains without Redis, and the sweep wakes the other workers later."""
    try:
        redis_step()
    except Exception as error:
        record_redis_fault("queue", error)


@dataclass(frozen=True)
class OutboxLane:
    """One outbox as a worker drains it: its wake-up signal (named as the lane), its drain, a function
    `(on_backlog=..., stop=...) -> DrainResult`, and its `Outbox` (counted by the in-process sweep)."""

    signal: DrainSignal
    drain: Callable[..., DrainResult]
    outbox: Outbox

    @property
    def name(self) -> str:
        return self.signal.name

    def job(self, hops: int = 0) -> int:
        """The drain job: wakes this worker's lane; where there is none, drains here (one time budget) and returns
        how many attempts were made. `hops`: how many workers passed this wake-up on already."""
        if wake(self.name, self.signal.queue_name, self.signal.job, hops):
            return 0
        self.signal.started()
        result = self.drain(on_backlog=self.signal.signal_quietly)
        if result.more_due:
            self.signal.signal()
        return len(result.attempts)

    def drain_once(self, stop: threading.Event) -> bool:
        """One drain of the lane: it claims for as long as rows are due, until `stop` is set; True when rows are
        still due."""
        without_raising(self.signal.started)
        return self.drain(on_backlog=self.signal.signal_quietly, stop=stop).more_due
