"""The wake-up of an outbox's drain: an RQ job queued after the commit that made rows due, at most one waiting
at a time."""
from __future__ import annotations

import secrets

from redis.exceptions import WatchError
from sqlalchemy import event
from sqlalchemy.orm import Session

from core.db import db, redis_connection
from core.queue import queue
from core.redis_faults import RedisBackoff


def queue_backoff() -> RedisBackoff:
    """The back-off of wake-up calls, one per Redis client (so per app), shared by every outbox."""
    client = redis_connection()
    backoff = getattr(client, "karibu_queue_backoff", None)
    if backoff is None:
        backoff = client.karibu_queue_backoff = RedisBackoff("queue")
    return backoff


class DrainSignal:
    """Wakes the workers that drain one outbox: `name` (also the worker's lane, jobs/lanes.py), whose drain job
    `job` (a dotted name) runs on queue `queue_name`."""

    def __init__(self, name: str, queue_name: str, job: str, *, job_timeout: int = 180,
                 queued_ttl_seconds: int = 30):
        self.name, self.queue_name, self.job, self.job_timeout = name, queue_name, job, job_timeout
        self.queued_key = f"karibu:{name}:drain-queued"
        self.queued_ttl_seconds = queued_ttl_seconds
        self._session_flag = f"karibu_{name}_drain_after_commit"
        event.listen(Session, "after_commit", self._on_commit)
        event.listen(Session, "after_rollback", self._on_rollback)

    def after_commit(self) -> None:
        """Queue a drain once the current transaction commits (nothing if it rolls back)."""
        db.session().info[self._session_flag] = True

    def signal(self, *, check_queue: bool = False) -> bool:
        """Queue a drain job unless one is already waiting; True when one was queued. With `check_queue` (the
        sweep), a flag whose job is no longer in the queue (lost, or taken by a worker killed before it started)
        does not count."""
        target = queue(self.queue_name)
        with redis_connection().pipeline() as pipe:
            pipe.watch(self.queued_key)
            waiting = pipe.get(self.queued_key)
            if waiting is not None and not (check_queue and pipe.lpos(target.key, waiting) is None):
                return False
            job_id = secrets.token_hex(16)
            pipe.multi()
            pipe.set(self.queued_key, job_id, ex=self.queued_ttl_seconds)
            target.enqueue(self.job, job_id=job_id, result_ttl=0, failure_ttl=86400, job_timeout=self.job_timeout,
                           pipeline=pipe)
            try:
                pipe.execute()
            except WatchError:
                return False  # another process queued one meanwhile
        return True

    def signal_quietly(self) -> None:
        """`signal()` from the request path or a drain: a Redis failure is recorded, not raised, and Redis is left
        alone for a back-off period after one (the sweep wakes a worker later)."""
        backoff = queue_backoff()
        if not backoff.may_try():
            return
        try:
            self.signal()
        except Exception as error:
            backoff.failed(error)
        else:
            backoff.succeeded()

    def started(self) -> None:
        """Called by a starting drain: commits from now on must queue another one."""
        redis_connection().delete(self.queued_key)

    def _on_commit(self, session: Session) -> None:
        if session.info.pop(self._session_flag, False):
            self.signal_quietly()

    def _on_rollback(self, session: Session) -> None:
        session.info.pop(self._session_flag, None)
