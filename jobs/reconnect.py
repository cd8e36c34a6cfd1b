"""Waiting out a Redis or database outage in a worker: capped exponential back-off with jitter, each failed
probe logged and counted."""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from redis.exceptions import RedisError
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from core.db import db, discard_session, redis_connection
from core.metrics import WORKER_CONNECTION_FAILURES

log = logging.getLogger(__name__)

FIRST_DELAY_SECONDS = 0.5
MAX_DELAY_SECONDS = 2.5
# While an outage lasts, one log line this often (each probe is still counted in the metrics).
LOG_EVERY_SECONDS = 30.0


class Backoff:
    """0.5 s doubling to 2.5 s; each pause is drawn between half and all of the current step (jitter, so
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


def wait_until_reachable(dependency: str, attempt: Callable[[], None], errors: tuple,
                         on_return: Callable[[], None] | None = None,
                         while_down: Callable[[], None] | None = None) -> None:
    """Call `attempt` until it raises none of `errors`, pausing with back-off in between (calling `while_down`
    after each failed attempt); after an outage, call `on_return` once the dependency answers again."""
    backoff = Backoff()
    began = logged = None
    failures = 0
    while True:
        try:
            attempt()
        except errors as error:
            failures += 1
            now = time.monotonic()
            WORKER_CONNECTION_FAILURES.labels(dependency=dependency).inc()
            if began is None or now - logged >= LOG_EVERY_SECONDS:
                log.warning("worker: %s unreachable (%s: %s)%s; trying again every %.1f s at most", dependency,
                            type(error).__name__, str(error).splitlines()[0] if str(error) else "",
                            f" for {now - began:.0f} s" if began is not None else "", backoff.cap)
                logged = now
            began = now if began is None else began
            if while_down is not None:
                while_down()
            time.sleep(backoff.next_pause())
            continue
        if began is not None:
            log.warning("worker: %s reachable again after %.1f s (%d failed probes)", dependency,
                        time.monotonic() - began, failures)
            if on_return is not None:
                on_return()
        return


def wait_for_redis() -> None:
    wait_until_reachable("redis", lambda: redis_connection().ping(), (RedisError,), sweep_now, wake_lanes_when_due)


def wake_lanes_when_due() -> None:
    """While Redis is down no drain job reaches this worker: its own sweep wakes its lanes when rows are due (the
    database alone is enough to deliver); errors are logged only."""
    from jobs.lanes import wake_lanes_with_due_rows

    try:
        wake_lanes_with_due_rows()
    except Exception as error:
        log.debug("worker: in-process sweep failed (%s)", type(error).__name__)


def wait_for_database() -> None:
    wait_until_reachable("database", _select_one, (SQLAlchemyError,), sweep_now)


def sweep_now() -> None:
    """Queue a drain for what is due (its job may have been lost in the outage); errors are logged only (the
    periodic sweep tries again)."""
    # imported here: the web app loads this module (the `worker` command) but never the outboxes' senders
    from core.messages.sweep import sweep_due_messages
    from core.webhooks.sweep import sweep_due_deliveries

    try:
        sweep_due_deliveries()
        sweep_due_messages()
    except Exception as error:
        log.warning("worker: sweep after reconnecting failed (%s); the periodic sweep will try again",
                    type(error).__name__)
    finally:
        discard_session()


def _select_one() -> None:
    try:
        db.session.execute(text("SELECT 1"))
    finally:
        db.session.remove()
