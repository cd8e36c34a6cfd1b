"""Monthly range partitions of the growing tables on PostgreSQL (migration 0028): made ahead of time, rows caught
by the DEFAULT partition moved into their month, whole expired months detached and dropped. No-ops on SQLite."""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from psycopg.errors import LockNotAvailable
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from core.db import db

# Each partitioned table and the time column it is partitioned on.
PARTITIONED = {"audit_log": "created_at", "webhook_attempts": "attempted_at", "events": "occurred_at"}
MONTHS_AHEAD = 2
# Making or detaching a partition takes an exclusive lock on the table, and every write queues behind a lock that
# waits: each waits at most LOCK_TIMEOUT_MS for it (behind a long reader), then tries again a little later.
LOCK_TIMEOUT_MS = 25  # a quarter of the 100 ms no write may wait, the rest for the machine's noise
LOCK_RETRY_PAUSE_SECONDS = 0.2
DETACH_TRIES = 20
MAKE_TRIES = 5  # then the next daily run tries again (months are made MONTHS_AHEAD ahead: about 60 more runs)
_BOUNDS = re.compile(r"FROM \('([^']+)'\) TO \('([^']+)'\)")
logger = logging.getLogger("karibu.partitions")


@dataclass(frozen=True)
class Partition:
    name: str
    start: datetime | None  # None for the DEFAULT partition
    end: datetime | None


def month_start(moment: datetime, months_later: int = 0) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months_later
    return datetime(index // 12, index % 12 + 1, 1)


def partitioning_active() -> bool:
    return db.engine.dialect.name == "postgresql"


def partitions(table: str) -> list[Partition]:
    """The partitions of `table` from the catalog, oldest first, the DEFAULT one last."""
    rows = db.session.execute(text(
        "SELECT child.relname, pg_get_expr(child.relpartbound, child.oid) FROM pg_inherits"
        " JOIN pg_class child ON child.oid = pg_inherits.inhrelid"
        " WHERE pg_inherits.inhparent = CAST(:table AS regclass)"), {"table": table}).all()
    found = []
    for name, bound in rows:
        match = _BOUNDS.search(bound)
        found.append(Partition(name, *(datetime.fromisoformat(value) for value in match.groups()))
                     if match else Partition(name, None, None))
    return sorted(found, key=lambda partition: (partition.start is None, partition.start or datetime.min))


def ensure_partitions(now: datetime) -> dict[str, list[str]]:
    """Make the partitions of the current month and the next MONTHS_AHEAD, and of any month whose rows fell
    into the DEFAULT partition (those rows are moved there); returns the partitions made, per table."""
    made: dict[str, list[str]] = {}
    if not partitioning_active():
        return made
    for table, column in PARTITIONED.items():
        stray = [month for (month,) in db.session.execute(text(
            f"SELECT DISTINCT date_trunc('month', {column}) FROM {table}_default"))]
        db.session.rollback()
        if stray:
            logger.warning("Rows of %s in its DEFAULT partition, moved to their month: %s", table,
                           [month.strftime("%Y-%m") for month in stray])
        existing = {partition.start for partition in partitions(table)}
        wanted = {month_start(now, ahead) for ahead in range(MONTHS_AHEAD + 1)} | set(stray)
        for month in sorted(wanted - existing):
            if not _make_partition(table, column, month):
                logger.warning("Partition %s not made (its table was busy); the next daily run tries again",
                               partition_name(table, month))
                break  # the later months would wait for the same lock
            made.setdefault(table, []).append(partition_name(table, month))
    return made


def partition_name(table: str, month: datetime) -> str:
    return f"{table}_p{month:%Y_%m}"


def _make_partition(table: str, column: str, month: datetime) -> bool:
    """One month's partition, in one transaction with the move of that month's rows out of the DEFAULT, under a
    short lock timeout; True once made."""
    bounds = {"start": month, "end": month_start(month, 1)}
    name = partition_name(table, month)

    def make() -> None:
        db.session.execute(text(f"CREATE TEMPORARY TABLE moving (LIKE {table}) ON COMMIT DROP"))
        db.session.execute(text(
            f"WITH moved AS (DELETE FROM {table}_default WHERE {column} >= :start AND {column} < :end RETURNING *)"
            " INSERT INTO moving SELECT * FROM moved"), bounds)
        db.session.execute(text(f"CREATE TABLE {name} PARTITION OF {table}"
                                f" FOR VALUES FROM ('{month.isoformat()}') TO ('{bounds['end'].isoformat()}')"))
        db.session.execute(text(f"INSERT INTO {table} SELECT * FROM moving"))

    return _with_lock_timeout(make, MAKE_TRIES)


def drop_expired_partitions(table: str, cutoff: datetime, still_needed: str | None = None,
                            parameters: dict | None = None) -> tuple[list[str], int]:
    """Detach and drop every partition of `table` whose whole month is before `cutoff`, unless the SQL condition
    `still_needed` (`{partition}` stands for the partition's name) is true; returns the dropped names and rows."""
    dropped, rows = [], 0
    for partition in partitions(table):
        if partition.end is None or partition.end > cutoff:
            continue
        if still_needed and db.session.scalar(text(still_needed.format(partition=partition.name)), parameters or {}):
            continue
        db.session.rollback()
        if not _detach(table, partition.name):
            logger.warning("Partition %s not detached (its table was busy); the next run tries again", partition.name)
            continue
        rows += db.session.scalar(text(f"SELECT count(*) FROM {partition.name}"))
        db.session.execute(text(f"DROP TABLE {partition.name}"))
        db.session.commit()
        dropped.append(partition.name)
    db.session.rollback()
    return dropped, rows


def _detach(table: str, name: str) -> bool:
    """Detach `name` from `table`: CONCURRENTLY where PostgreSQL allows it (no DEFAULT partition), else with a short
    lock timeout so that no write waits long behind it; True once detached."""
    if not any(partition.start is None for partition in partitions(table)):
        db.session.rollback()
        with db.engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                f"ALTER TABLE {table} DETACH PARTITION {name} CONCURRENTLY")
        return True
    return _with_lock_timeout(
        lambda: db.session.execute(text(f"ALTER TABLE {table} DETACH PARTITION {name}")), DETACH_TRIES)


def _with_lock_timeout(work: Callable[[], object], tries: int) -> bool:
    """Run `work` in a transaction of its own whose every lock wait ends after LOCK_TIMEOUT_MS, up to `tries` times
    while a lock is not available; True once committed."""
    db.session.rollback()
    for _ in range(tries):
        try:
            db.session.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT_MS}ms'"))
            work()
            db.session.commit()
            return True
        except OperationalError as error:
            db.session.rollback()
            if not isinstance(error.orig, LockNotAvailable):
                raise
            time.sleep(LOCK_RETRY_PAUSE_SECONDS)
    return False
