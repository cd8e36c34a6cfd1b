"""The rows of an outbox: which are due, leasing them to one worker (a conditional UPDATE; a killed worker's lease
lapses), counting them for the sweep, and the commits of the engine."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, text, update

from core.db import db
from core.outbox.schedule import RetrySchedule
from core.outbox.wakeup import DrainSignal

# The count runs in workers' maintenance too, outside any job timeout: never wait long for a lock.
LOCK_TIMEOUT = "5s"


@dataclass(frozen=True)
class Outbox:
    """One outbox table and its rules. `model` has the columns `id`, `status`, `attempts`, `next_attempt_at` and
    `updated_at`, and the lease columns (core/outbox/columns.py `LeaseColumns`)."""

    model: type
    sendable: tuple[str, ...]  # statuses a worker may still send
    order: tuple  # oldest first: the columns a claim orders by
    lease: timedelta
    schedule: RetrySchedule
    succeeded: str  # the status after a successful attempt
    given_up: str  # the status after a permanent failure, or a temporary one with no attempt left
    now: Callable[[], datetime]  # the kind's clock (tests replace it)
    retry: str = "retry_scheduled"

    def due(self, now: datetime) -> tuple:
        model = self.model
        return (model.status.in_(self.sendable), model.next_attempt_at <= now,
                or_(model.lease_expires_at.is_(None), model.lease_expires_at < now))


@dataclass(frozen=True)
class Claim:
    token: str
    expires: datetime
    ids: list[str]


def without_waiting_for_disk() -> None:
    """Let this transaction's commit return before its WAL record is flushed (PostgreSQL only): a crash can only
    cause one more attempt of a row."""
    if db.session.get_bind().dialect.name == "postgresql":
        db.session.execute(text("SET LOCAL synchronous_commit TO OFF"))


def claim(outbox: Outbox, now: datetime, limit: int) -> Claim:
    """Lease up to `limit` due rows (oldest first) under a new token and commit."""
    token = secrets.token_hex(8)
    without_waiting_for_disk()
    ids = lease(outbox, now, limit, token)
    db.session.commit()
    return Claim(token, now + outbox.lease, ids)


def lease(outbox: Outbox, now: datetime, limit: int, token: str) -> list[str]:
    """Lease up to `limit` due rows, oldest first, in the current transaction; returns their ids. The batch is picked
    once, in a materialised CTE (docs/architecture.md says why)."""
    model = outbox.model
    picked = (
        select(model.id)
        .where(*outbox.due(now))
        .order_by(*outbox.order)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("picked")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    return list(db.session.scalars(
        update(model)
        # checked again on the locked row, so two workers can never lease the same row
        .where(model.id == picked.c.id, *outbox.due(now))
        .values(lease_token=token, lease_expires_at=now + outbox.lease)
        .returning(model.id)
    ))


def count_due(outbox: Outbox) -> int:
    if db.session.get_bind().dialect.name == "postgresql":
        db.session.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    count = db.session.scalar(select(func.count()).select_from(outbox.model).where(*outbox.due(outbox.now())))
    db.session.rollback()
    return count


def sweep(outbox: Outbox, drain_signal: DrainSignal) -> int:
    """Wake a worker when rows are due and unclaimed, even if a stale flag says a drain is queued; returns how
    many are due."""
    due = count_due(outbox)
    if due:
        drain_signal.signal(check_queue=True)
    return due
