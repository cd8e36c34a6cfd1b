"""Shared fixtures.

The database is chosen by KARIBU_TEST_DB (`sqlite`, the default, or `postgres`). For PostgreSQL a private
database is created for the pytest session and dropped afterwards, so parallel runs never collide; every
table is emptied after each test. Redis is the real one at KARIBU_TEST_REDIS_URL.

Do not make test-client requests inside `with app.app_context():` blocks: Flask would reuse that context (and
its `g`) for the request. Factories open their own short contexts and return detached rows.

The suite flushes its Redis database, so it uses only a database marked as its own (tests/redis_guard.py):
an empty one is marked at the start of the session, and one holding someone else's data stops the run.

Run in parallel (pytest-xdist, `-n N`), each worker is a session of its own: it makes its own PostgreSQL or
SQLite database, and its own Redis database, the next ones after KARIBU_TEST_REDIS_URL's: worker gw0 uses
that database's number, gw1 the number plus one, and so on, so `-n 4` from `.../6379/4` uses databases 4 to
7 (all free, or marked as the suite's; Redis has 16 by default). Each worker marks and checks its own.
"""
from __future__ import annotations

import os
import uuid

import pytest
import redis
from flask import Flask

TEST_SECRET_KEY = "test-secret-key-of-at-least-32-characters"
# `wsgi` builds an app when imported, and subprocesses inherit the environment: a fixed test key keeps both
# from generating a key file in the checkout's instance folder.
os.environ.setdefault("SECRET_KEY", TEST_SECRET_KEY)
from flask_migrate import upgrade
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from core.config import normalise_database_url
from core.db import db as _db
from tests.factories import Factory
from tests.openapi_check import ErrorShapeCheckingClient
from tests.redis_guard import GuardedRedis, mark_if_empty, refusal_message
from tests.simulators import live_registries, registry_simulator, running_simulator  # noqa: F401 (fixtures)
from wsgi import create_app

TEST_DB = os.environ.get("KARIBU_TEST_DB", "sqlite")
# Every test client of every app the suite makes checks each API and callback error against the document.
Flask.test_client_class = ErrorShapeCheckingClient
POSTGRES_ADMIN_URL = normalise_database_url(
    os.environ.get("KARIBU_TEST_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres"))


def worker_redis_url(base_url: str, worker: str | None) -> str:
    """The Redis database of this pytest process: the base one, or for xdist worker gwN the base number + N."""
    if not worker:
        return base_url
    base, _, number = base_url.rstrip("/").rpartition("/")
    if not number.isdigit():
        base, number = base_url.rstrip("/"), "0"
    return f"{base}/{int(number) + int(worker.removeprefix('gw'))}"


REDIS_URL = worker_redis_url(os.environ.get("KARIBU_TEST_REDIS_URL", "redis://127.0.0.1:6379/1"),
                             os.environ.get("PYTEST_XDIST_WORKER"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "long_running: minutes of waiting on an outage or a clock; such files are scheduled first")
    config.addinivalue_line(
        "markers", "latency_bound: asserts how long deliveries wait; scripts/test.sh runs these alone, after the "
                   "parallel runs, so a bound is not measured on a machine our own suite overcommits")


def pytest_collection_modifyitems(config, items):
    """The long-running files first (in their order), then the rest: pytest-xdist hands out whole files in
    collection order, so a worker that starts a two-minute outage test early does not finish long after the
    others."""
    items.sort(key=lambda item: item.get_closest_marker("long_running") is None)


def pytest_sessionstart(session):
    """Refuse a Redis database that holds data the suite did not write (it would be flushed).

    Under xdist this runs in each worker too, for the worker's own database (the controller, which runs no
    test, checks the base one)."""
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        if not mark_if_empty(client):
            pytest.exit(refusal_message(REDIS_URL, client), returncode=pytest.ExitCode.USAGE_ERROR)
    except redis.ConnectionError:
        pass  # the tests that need Redis fail with the connection error themselves
    finally:
        client.close()


def _create_postgres_database() -> str:
    name = f"karibu_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return name


def _drop_postgres_database(name: str) -> None:
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory):
    if TEST_DB == "postgres":
        name = _create_postgres_database()
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
        _drop_postgres_database(name)
    elif TEST_DB == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'karibu.db'}"
    else:
        raise pytest.UsageError("KARIBU_TEST_DB must be sqlite or postgres")


def app_config(database_url: str, storage_dir) -> dict:
    return {
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": database_url,
        "SECRET_KEY": TEST_SECRET_KEY,
        "REDIS_URL": REDIS_URL,
        "RATELIMIT_STORAGE_URI": REDIS_URL,
        "RATELIMIT_KEY_PREFIX": f"karibu-test-{uuid.uuid4().hex[:8]}",
        "API_RATE_LIMIT": "100000/minute",
        "API_AUTH_FAILURE_RATE_LIMIT": "100000/minute",
        "DOCUMENT_STORAGE_DIR": str(storage_dir),
        "TRIAL_API_KEY": "sk_trial_demo",
        "EDGE_SHARED_SECRET": "",
    }


@pytest.fixture(scope="session")
def app(database_url, tmp_path_factory):
    app = create_app(app_config(database_url, tmp_path_factory.mktemp("documents")))
    with app.app_context():
        upgrade(directory=os.path.join(app.root_path, "migrations"))
    yield app
    with app.app_context():
        _db.engine.dispose()


@pytest.fixture(autouse=True)
def _clean_database(request):
    """Empty every table after each test that used the app (schema stays)."""
    yield
    if "app" not in request.fixturenames:
        return
    app = request.getfixturevalue("app")
    with app.app_context():
        _db.session.remove()
        tables = [table.name for table in reversed(_db.metadata.sorted_tables)]
        for attempt in range(TRUNCATE_ATTEMPTS):
            try:
                _empty_tables(tables)
                return
            except OperationalError as error:
                # A live server may still be answering the test's last request (a browser's poll), its
                # transaction reading one table while the TRUNCATE holds another: PostgreSQL breaks the deadlock
                # by failing one of them, and the request's is as likely as ours.
                if "deadlock detected" not in str(error) or attempt == TRUNCATE_ATTEMPTS - 1:
                    raise


# How often the cleanup tries again after PostgreSQL chose its TRUNCATE as a deadlock's victim.
TRUNCATE_ATTEMPTS = 5


def _empty_tables(tables: list[str]) -> None:
    with _db.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        else:
            # The counters last: deleting applications fires the triggers that write them.
            counters = {"application_counts", "application_day_counts"}
            for table in [name for name in tables if name not in counters] + sorted(counters):
                connection.execute(text(f"DELETE FROM {table}"))


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def factory(app):
    return Factory(app)


@pytest.fixture
def redis_client():
    """The test database's client; its flushdb() refuses a database not marked as the suite's."""
    client = GuardedRedis.from_url(REDIS_URL)
    yield client
    client.close()


def auth_header(raw_key: str) -> dict:
    return {"Authorization": f"Bearer {raw_key}"}
