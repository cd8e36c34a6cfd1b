"""The environment of the Karibu processes a benchmark starts, the bench database's URL, `flask` commands."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BENCH_SECRET_KEY = "bench-secret-key-of-at-least-32-characters"
DEFAULT_DATABASE_URL = "postgresql+psycopg://root@127.0.0.1:5432/karibu_bench"
TRIAL_KEY = "sk_trial_demo"
UNLIMITED = "100000000/minute"
# The benchmarks measure the application, not its rate limiters (each can still be set in the environment).
RATE_LIMITS = ("API_RATE_LIMIT", "PUBLIC_FORM_RATE_LIMIT", "PORTAL_LOGIN_RATE_LIMIT",
               "PORTAL_LOGIN_ADDRESS_RATE_LIMIT", "PORTAL_LOGIN_ACCOUNT_RATE_LIMIT")


def database_url() -> str:
    """DATABASE_URL, or the 1M-application `karibu_bench` database on loopback."""
    return os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)


def libpq_url(url: str) -> str:
    """A database URL in the form psql and psycopg accept."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def sqlalchemy_url(url: str) -> str:
    """A PostgreSQL URL with SQLAlchemy's psycopg (3) driver named."""
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def server_env(database: str | None = None, *, source: Path = PROJECT_ROOT, **settings: str) -> dict[str, str]:
    """This process's environment for a Karibu server, worker or command run from the tree `source`.

    The test suite's KARIBU_TEST_* settings are dropped; the database is `database` (default: database_url()),
    SECRET_KEY and REDIS_URL those of the environment or the bench's own, no edge secret, the rate limits out of
    the way and warnings only in the log. `settings` override any of it.
    """
    env = {name: value for name, value in os.environ.items() if not name.startswith("KARIBU_TEST")}
    env.update({name: os.environ.get(name, UNLIMITED) for name in RATE_LIMITS})
    env.update(DATABASE_URL=database or database_url(), SECRET_KEY=os.environ.get("SECRET_KEY", BENCH_SECRET_KEY),
               REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), EDGE_SHARED_SECRET="",
               PYTHONPATH=str(source), LOG_LEVEL="WARNING")
    env.update(settings)
    return env


def flask_cli(*args: str, env: dict[str, str] | None = None, source: Path = PROJECT_ROOT) -> str:
    """The output of `flask --app wsgi <args>` (default environment: server_env()); SystemExit if it fails."""
    completed = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args], cwd=source,
                               env=env if env is not None else server_env(source=source), capture_output=True,
                               text=True)
    if completed.returncode:
        raise SystemExit(f"flask {' '.join(args)} failed:\n{completed.stderr[-2000:]}")
    return completed.stdout


def flask_json(*args: str, env: dict[str, str] | None = None, source: Path = PROJECT_ROOT) -> dict:
    """`flask --app wsgi <args> --json`, parsed."""
    return json.loads(flask_cli(*args, "--json", env=env, source=source))
