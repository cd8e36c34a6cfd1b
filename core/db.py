"""The database (Flask-SQLAlchemy, with its SQLite and PostgreSQL tuning), Flask-Migrate and the Redis client.

The web extensions (sign-in, CSRF, rate limits, translations) belong to the web layer: `portal/` and `wsgi.py`.
"""
from __future__ import annotations

import re
import sqlite3
import time
from collections import namedtuple

import psycopg
import redis
from flask import current_app
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import Engine, Pool, Select, event
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

from core.config import settings
from core.models.base import Base

# Bound parameters hold applicants' personal data and secrets: never put them in error messages and logs.
db = SQLAlchemy(model_class=Base, engine_options={"hide_parameters": True})

SQLITE_BUSY_TIMEOUT_MS = 5000

# What the database raises when it cannot be reached or its connection died: "try again later", not a bug.
DATABASE_UNAVAILABLE_ERRORS = (OperationalError, InterfaceError, DisconnectionError, psycopg.OperationalError,
                               psycopg.InterfaceError)
# SQLite reports a missing table or a bad statement as an OperationalError too: those are bugs (500), and only
# these answers say the database itself cannot be reached right now.
_SQLITE_UNAVAILABLE = ("database is locked", "database table is locked", "unable to open database",
                       "disk i/o error", "database or disk is full")


def is_database_outage(error: BaseException) -> bool:
    """Whether `error` says the database cannot be reached (an outage: 503), not that a statement is wrong."""
    if not isinstance(error, DATABASE_UNAVAILABLE_ERRORS):
        return False
    original = getattr(error, "orig", None)
    if isinstance(original, sqlite3.Error):
        return any(text in str(original).lower() for text in _SQLITE_UNAVAILABLE)
    return True
# Answered to a request met by such an error, as 503's Retry-After: an outage usually lasts seconds (a restart,
# a fail-over), so clients are asked to come back soon.
DATABASE_RETRY_AFTER_SECONDS = 5


@event.listens_for(Engine, "connect")
def _tune_sqlite(dbapi_connection, _record) -> None:
    """SQLite: write-ahead log (readers never block the writer), fewer fsyncs, wait for locks, and
    transactions begun by `_begin_sqlite_write_transaction` instead of by pysqlite."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()
        dbapi_connection.isolation_level = None  # pysqlite never emits BEGIN itself


_WRITE_STATEMENT = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


@event.listens_for(Engine, "before_cursor_execute")
def _begin_sqlite_write_transaction(connection, cursor, statement, parameters, context, executemany) -> None:
    """SQLite: open a writing transaction with BEGIN IMMEDIATE at its first write or locking read."""
    if connection.dialect.name != "sqlite" or connection.connection.dbapi_connection.in_transaction:
        return
    if _WRITE_STATEMENT.match(statement) or _locks_rows(context):
        cursor.execute("BEGIN IMMEDIATE")


def _locks_rows(context) -> bool:
    compiled = getattr(context, "compiled", None)
    if compiled is None:
        return False
    if context.isinsert or context.isupdate or context.isdelete:
        return True
    return getattr(compiled.statement, "_for_update_arg", None) is not None  # select(...).with_for_update()


_READ_STATEMENT = re.compile(r"\s*SELECT\b", re.IGNORECASE)
_TRANSACTION_WROTE = "karibu_transaction_wrote"  # in Connection.info, for the transaction now open


@event.listens_for(Engine, "before_cursor_execute")
def _note_writing_statement(connection, cursor, statement, parameters, context, executemany) -> None:
    """Remember that the open transaction ran something other than a SELECT (see `_end_reads_with_commit`)."""
    if not _READ_STATEMENT.match(statement):
        connection.info[_TRANSACTION_WROTE] = True


def note_write(connection) -> None:
    """For a write sent on the driver's connection, past SQLAlchemy (e.g. `COPY … FROM STDIN`)."""
    connection.info[_TRANSACTION_WROTE] = True


@event.listens_for(Engine, "commit")
def _forget_writes_on_commit(connection) -> None:
    connection.info.pop(_TRANSACTION_WROTE, None)


@event.listens_for(Engine, "rollback")
def _end_reads_with_commit(connection) -> None:
    """PostgreSQL: end a transaction that only read with COMMIT (keeps psycopg's prepared statements)."""
    wrote = connection.info.pop(_TRANSACTION_WROTE, False)
    if wrote or connection.dialect.name != "postgresql":
        return
    driver_connection = connection.connection.driver_connection
    if driver_connection.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS:
        try:
            driver_connection.commit()  # the ROLLBACK that follows finds no transaction and sends nothing
        except psycopg.Error:
            pass  # the rollback that follows meets the same broken connection and reports it


def read_once(statement, parameters: dict):
    """The rows of a read-only request's SELECT (columns only), on PostgreSQL outside any transaction."""
    session = db.session()
    outside_a_transaction = not session.in_transaction() and session.get_bind().dialect.name == "postgresql"
    options = {"isolation_level": "AUTOCOMMIT"} if outside_a_transaction else None
    return session.connection(execution_options=options).execute(statement, parameters).all()


# When a connection was last found broken outside SQLAlchemy (KeptSelect), as time.time().
_broken_connection_seen = 0.0
_CONNECTED_AT, _CHECKED_AT = "karibu_connected_at", "karibu_checked_at"  # in a pooled connection's record info


def _note_broken_connection() -> None:
    global _broken_connection_seen
    _broken_connection_seen = time.time()


@event.listens_for(Pool, "connect")
def _note_connected_at(dbapi_connection, record) -> None:
    record.info[_CONNECTED_AT] = time.time()


@event.listens_for(Pool, "checkout")
def _check_connections_older_than_a_break(dbapi_connection, record, proxy) -> None:
    """A PostgreSQL connection made before another was found broken (the database may have restarted) is pinged
    once when next taken from the pool: a dead one is replaced (DisconnectionError), a live one kept."""
    seen = _broken_connection_seen
    if not isinstance(dbapi_connection, psycopg.Connection) or record.info.get(_CONNECTED_AT, 0.0) >= seen \
            or record.info.get(_CHECKED_AT, 0.0) >= seen:
        return
    record.info[_CHECKED_AT] = time.time()
    try:
        dbapi_connection.execute("SELECT 1")
        dbapi_connection.rollback()
    except psycopg.Error as error:
        raise DisconnectionError("a pooled connection did not answer after another was found broken") from error


class KeptSelect:
    """A SELECT kept and run again with each request's parameter values (one per shape), rows as named tuples.

    On PostgreSQL outside a transaction it runs on the driver directly; elsewhere as `read_once` does.
    """

    def __init__(self, statement: Select):
        self.statement = statement
        self._compiled = None
        self._driver_form: tuple[str, type] | None = None

    def rows(self, parameters: dict) -> list:
        session = db.session()
        dialect = session.get_bind().dialect
        if session.in_transaction() or dialect.name != "postgresql":
            return read_once(self.statement, parameters)
        if self._compiled is None:
            self._prepare(dialect, parameters)
        if self._driver_form is None:
            return read_once(self.statement, parameters)
        return self._rows_on_the_driver(parameters)

    def _prepare(self, dialect, parameters: dict) -> None:
        compiled = self.statement.compile(dialect=dialect)
        names = list(self.statement.selected_columns.keys())
        driver_form = None
        if names and not any(parameter.expanding for parameter in compiled.post_compile_params):
            try:
                row_type = namedtuple("SelectedRow", names)
            except ValueError:  # a name repeated, or one an attribute cannot have: left to SQLAlchemy's Row
                row_type = None
            if row_type is not None:
                # Literal-execute values (a page's LIMIT) are fixed with the statement, so its text is too.
                driver_form = (compiled.construct_expanded_state(parameters).statement, row_type)
        self._driver_form, self._compiled = driver_form, compiled

    def _rows_on_the_driver(self, parameters: dict) -> list:
        sql, row_type = self._driver_form
        values = self._compiled.construct_params(parameters)
        with db.engine.connect() as pooled:
            connection = pooled.execution_options(isolation_level="AUTOCOMMIT").connection.driver_connection
            try:
                with connection.cursor(row_factory=lambda _cursor: row_type._make) as cursor:
                    return cursor.execute(sql, values).fetchall()
            except psycopg.Error:
                if connection.broken:
                    pooled.invalidate()  # only this one: the pool's others are checked once when next taken
                    _note_broken_connection()
                raise


class DeferredMigrate:
    """Stands in `app.extensions["migrate"]` until a `flask db` command first reads it: only then is
    Flask-Migrate (with Alembic, a heavy import) imported and bound, not in every web worker."""

    def __init__(self, app, directory: str):
        self._app, self._directory = app, directory
        app.extensions["migrate"] = self

    def __getattr__(self, name: str):
        from flask_migrate import Migrate

        Migrate(self._app, db, directory=self._directory)  # replaces this stand-in in app.extensions
        return getattr(self._app.extensions["migrate"], name)


def redis_connection() -> redis.Redis:
    """One shared client per app (a connection pool), built lazily from REDIS_URL, with short timeouts.

    (The RQ worker lengthens the socket timeout of its own connection to cover its blocking dequeue.)
    """
    client = current_app.extensions.get("karibu_redis")
    if client is None:
        client = redis.Redis.from_url(settings().REDIS_URL, **settings().redis_options())
        current_app.extensions["karibu_redis"] = client
    return client


def discard_session() -> None:
    """End the current session; a connection that cannot be rolled back is invalidated, not reused."""
    session = db.session()
    connections = _connections_of(session)
    try:
        session.close()
    except Exception as error:
        current_app.logger.warning("discarding a database connection that could not be rolled back (%s)",
                                   type(error).__name__)
        for connection in connections:
            connection.invalidate()
    finally:
        db.session.remove()


def _connections_of(session) -> list:
    """The connections the session's transaction holds (read before closing it, which may fail)."""
    transaction = session.get_transaction()
    if transaction is None:
        return []
    return [connection for connection, *_ in getattr(transaction, "_connections", {}).values()]
