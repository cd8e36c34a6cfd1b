"""Bench databases: the seeded institution and a live key of it, throwaway PostgreSQL databases."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from bench.harness.env import database_url, flask_cli, flask_json, libpq_url, server_env

ADMIN_URL = os.environ.get("KARIBU_BENCH_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres")


def bench_institution_id(database: str | None = None) -> str:
    """The institution holding the most applications (the seeded one), unless BENCH_INSTITUTION_ID is set."""
    chosen = os.environ.get("BENCH_INSTITUTION_ID")
    if chosen:
        return chosen
    import psycopg

    with psycopg.connect(libpq_url(database or database_url())) as connection:
        row = connection.execute("SELECT institution_id FROM applications GROUP BY institution_id "
                                 "ORDER BY count(*) DESC LIMIT 1").fetchone()
    if row is None:
        raise SystemExit("the bench database holds no applications: run `flask --app wsgi seed-demo` first")
    return row[0]


def new_api_key(institution_id: str, name: str = "bench", env: dict[str, str] | None = None) -> str:
    """A new live API key of the institution (`flask api-keys create`)."""
    return flask_json("api-keys", "create", "--institution", institution_id, "--name", name,
                      env=env if env is not None else server_env())["api_key"]


@contextmanager
def throwaway_database(prefix: str = "karibu_bench", *, keep: bool = False) -> Iterator[str]:
    """A new, empty PostgreSQL database next to KARIBU_BENCH_POSTGRES_URL (default: the local server's
    `postgres`), dropped on exit unless `keep` (then its name is printed). Yields its libpq URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = libpq_url(ADMIN_URL)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.rsplit("/", 1)[0] + "/" + name
    finally:
        if keep:
            print(f"kept database {name}")
        else:
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def migrated_database(prefix: str = "karibu_bench", **settings: str) -> Iterator[str]:
    """A throwaway database (as above) with Karibu's migrations applied by `flask db upgrade`, run with
    server_env(url, **settings). Yields its libpq URL."""
    with throwaway_database(prefix) as url:
        flask_cli("db", "upgrade", env=server_env(url, **settings))
        yield url
