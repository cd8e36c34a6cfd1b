"""Time limits of the listing's expensive statements (a text search page, an exact count); past one, `TookTooLong`."""
from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager

import psycopg
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

from core.applications.bulkheads import Overloaded
from core.config import settings
from core.db import db

# SQLite calls the progress handler every this many virtual-machine instructions (a few microseconds).
_SQLITE_PROGRESS_STEPS = 1000

TOOK_TOO_LONG = {
    "search": "The search took too long: narrow it (a longer or rarer text, or more filters) and retry",
    "count": "Counting these applications took too long: narrow the search or the filters and retry",
}


class TookTooLong(Overloaded):
    """A search or count stopped by its statement timeout."""

    reason = "took_too_long"


def _timeout_ms(kind: str) -> int:
    config = settings()
    return {"search": config.SEARCH_STATEMENT_TIMEOUT_MS, "count": config.COUNT_STATEMENT_TIMEOUT_MS}[kind]


@contextmanager
def time_limited(kind: str):
    """Run the block's statements on the request's session within the `kind` ("search", "count") timeout."""
    milliseconds = _timeout_ms(kind)
    if not milliseconds:
        yield
        return
    session = db.session
    postgres = session.get_bind().dialect.name == "postgresql"
    if postgres:
        session.execute(select(func.set_config("statement_timeout", str(milliseconds), True)))
    else:
        driver_connection = session.connection().connection.driver_connection
        deadline = time.monotonic() + milliseconds / 1000
        driver_connection.set_progress_handler(lambda: time.monotonic() > deadline, _SQLITE_PROGRESS_STEPS)
    try:
        yield
    except OperationalError as error:
        if not _cut_by_timeout(error):
            raise
        session.rollback()
        raise TookTooLong(TOOK_TOO_LONG[kind], retry_after=settings().BULKHEAD_RETRY_AFTER_SECONDS) from None
    finally:
        if not postgres:
            driver_connection.set_progress_handler(None, 0)
    if postgres:
        session.execute(text("SET LOCAL statement_timeout TO DEFAULT"))


def _cut_by_timeout(error: OperationalError) -> bool:
    original = getattr(error, "orig", None)
    if isinstance(original, psycopg.errors.QueryCanceled):
        return True
    return isinstance(original, sqlite3.OperationalError) and "interrupted" in str(original).lower()
