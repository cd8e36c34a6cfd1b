"""Waiting out a Redis or database outage in a worker: capped exponential back-off with jitter.

Each failed attempt is one log line (no stack trace) and one increment of
`karibu_worker_connection_failures_total{dependency}`, so an outage of any length is visible and cheap.
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from redis.exceptions import RedisError
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from core.db import db, redis_connection
from core.metrics import WORKER_CONNECTION_FAILURES

log = logging.getLogger(__name__)

FIRST_DELAY_SECONDS = 0.5
MAX_DELAY_SECONDS = 15.0


class Backoff:
    """0.5 s doubling to 15 s; each pause is drawn between half and all of the current step (jitter, so
    workers restarted together do not hammer a returning server in step)."""

    def __init__(self, first: float = FIRST_DELAY_SECONDS, cap: float = MAX_DELAY_SECONDS):
        self.first, self.cap = first, cap
        self.step = first

    def reset(self) -> None:
        self.step = self.first

    def next_pause(self) -> float:
        pause = random.uniform(self.step / 2, self.step)
        self.step = min(self.cap, self.step * 2)
        return pause


def wait_until_reachable(dependency: str, attempt: Callable[[], None], errors: tuple) -> None:
    """Call `attempt` until it raises none of `errors`, pausing with back-off in between."""
    backoff = Backoff()
    while True:
        try:
            attempt()
            return
        except errors as error:
            pause = backoff.next_pause()
            WORKER_CONNECTION_FAILURES.labels(dependency=dependency).inc()
            log.warning("worker: %s unreachable (%s: %s); trying again in %.1f s", dependency,
                        type(error).__name__, str(error).splitlines()[0] if str(error) else "", pause)
            time.sleep(pause)


def wait_for_redis() -> None:
    wait_until_reachable("redis", lambda: redis_connection().ping(), (RedisError,))


def wait_for_database() -> None:
    wait_until_reachable("database", _select_one, (SQLAlchemyError,))


def _select_one() -> None:
    try:
        db.session.execute(text("SELECT 1"))
    finally:
        db.session.remove()
