"""Drain lanes: in a worker process, webhook deliveries and messages each drain on a thread of their own.

RQ runs one job at a time, so a drain run as a job makes every other job wait behind it: emails waited a
minute behind webhook drains for a slow receiver, webhooks waited behind email drains. In a worker process
(`flask worker`), a drain job only wakes its kind's lane and returns at once; the lane drains with its own
sender threads and connections (16 webhook slots, 4 SMTP connections), so the two kinds never share capacity
and neither waits for the other. A lane woken while it drains drains again once done, and drains again at once
when its time budget ran out with rows still due. A drain job that finds its lane already draining passes the
wake-up on to another worker (at most PASS_ON_HOPS times), so a backlog is still shared by every idle worker:
RQ hands a job to the worker that has waited longest. Where no lane runs (a plain `rq worker`, tests running jobs
in their own process), the job drains itself, as before.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from flask import Flask

from core.db import discard_session
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
    """Wake this process's lane `name`; when it is draining already, queue the job again (`hops` + 1) for
    another worker unless it went round PASS_ON_HOPS times. False when this process has no such lane (the
    caller drains itself)."""
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
