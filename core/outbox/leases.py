"""The rows of an outbox: which are due, leasing them to one worker, and the commits of the engine."""

from __future__ import annotations

from sqlalchemy import text

from core.db import db


def without_waiting_for_disk() -> None:
    """Let this transaction's commit return before its WAL record is flushed (PostgreSQL only).

    Safe for claims and attempt records: if the database crashes and forgets the last moments of them, the row
    is simply attempted again (at-least-once), and the outbox rows themselves were committed durably by the
    transaction of the change that wrote them.
    """
    if db.session.get_bind().dialect.name == "postgresql":
        db.session.execute(text("SET LOCAL synchronous_commit TO OFF"))
