"""Enqueue RQ jobs by dotted name, so `core` never imports `jobs`; wake the workers that drain an outbox."""
from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import event
from sqlalchemy.orm import Session

from core.db import db, redis_connection
from core.redis_faults import record_redis_fault

if TYPE_CHECKING:
    from rq import Queue

QUEUE_NAMES = ("webhooks", "messages", "default")
DEFAULT_JOB_TIMEOUT = 60


def queue(name: str) -> Queue:
    """RQ is imported on the first enqueue, not by every web worker at start."""
    from rq import Queue

    if name not in QUEUE_NAMES:
        raise ValueError(f"unknown queue {name!r}")
    return Queue(name, connection=redis_connection(), default_timeout=DEFAULT_JOB_TIMEOUT)


def enqueue(queue_name: str, function_path: str, *args, **kwargs):
    return queue(queue_name).enqueue(function_path, *args, **kwargs)


class DrainSignal:
    """Wakes the workers that drain one outbox (webhook deliveries, messages).

    The outbox rows are the truth; a drain job is only a wake-up call. `after_commit()` asks for one once the
    current transaction commits (nothing if it rolls back). At most one drain job waits at a time: a Redis
    flag, cleared by the drain when it starts (`started()`), so a burst of commits queues one job. When
    Redis is away the change stays committed and the periodic sweep wakes a worker later.
    """

    def __init__(self, outbox: str, queue_name: str, job: str, *, job_timeout: int = 180,
                 queued_ttl_seconds: int = 30):
        self.queue_name, self.job, self.job_timeout = queue_name, job, job_timeout
        self.queued_key = f"karibu:{outbox}:drain-queued"
        self.queued_ttl_seconds = queued_ttl_seconds
        self._session_flag = f"karibu_{outbox}_drain_after_commit"
        event.listen(Session, "after_commit", self._on_commit)
        event.listen(Session, "after_rollback", self._on_rollback)

    def after_commit(self) -> None:
        db.session().info[self._session_flag] = True

    def signal(self) -> bool:
        """Queue a drain job unless one is already waiting; True when one was queued."""
        if not redis_connection().set(self.queued_key, b"1", nx=True, ex=self.queued_ttl_seconds):
            return False
        enqueue(self.queue_name, self.job, result_ttl=0, failure_ttl=86400, job_timeout=self.job_timeout)
        return True

    def signal_quietly(self) -> None:
        """`signal()`, with a Redis failure recorded instead of raised (the sweep wakes a worker later)."""
        try:
            self.signal()
        except Exception as error:
            record_redis_fault("queue", error)

    def started(self) -> None:
        """Called by a starting drain: commits from now on must queue another one."""
        redis_connection().delete(self.queued_key)

    def _on_commit(self, session: Session) -> None:
        if session.info.pop(self._session_flag, False):
            self.signal_quietly()

    def _on_rollback(self, session: Session) -> None:
        session.info.pop(self._session_flag, None)
