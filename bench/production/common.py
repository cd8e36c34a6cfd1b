"""Shared helpers of the production benchmarks: a private PostgreSQL database, gunicorn on loopback."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import psycopg
import requests

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ADMIN_DSN = os.environ.get("BENCH_POSTGRES_ADMIN", "postgresql://root@127.0.0.1:5432/postgres")
SECRET_KEY = "production-bench-secret-key-0123456789abcdef"
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/8")


@contextmanager
def private_database():
    """A new PostgreSQL database, migrated; dropped afterwards. Yields its SQLAlchemy URL."""
    name = f"karibu_bench_production_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    url = ADMIN_DSN.rsplit("/", 1)[0] + "/" + name
    try:
        flask_cli(url, "db", "upgrade")
        yield url
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def server_env(database_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url, SECRET_KEY=SECRET_KEY, REDIS_URL=REDIS_URL,
               API_RATE_LIMIT="100000000/minute", EDGE_SHARED_SECRET="", PYTHONPATH=str(PROJECT_ROOT), **extra)
    return env


def flask_cli(database_url: str, *args: str) -> str:
    completed = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args], cwd=PROJECT_ROOT,
                               env=server_env(database_url), capture_output=True, text=True)
    if completed.returncode:
        raise SystemExit(completed.stderr[-2000:])
    return completed.stdout


def seed(database_url: str, applications: int) -> dict:
    return json.loads(flask_cli(database_url, "seed-demo", "--applications", str(applications), "--json"))


def free_port() -> int:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def gunicorn(database_url: str, workers: int = 2, **extra: str):
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "python:ops.gunicorn_config", "--bind",
         f"127.0.0.1:{port}", "--workers", str(workers), "wsgi:app"],
        cwd=PROJECT_ROOT, env=server_env(database_url, **extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if requests.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def median(values: list[float]) -> float:
    return statistics.median(values)
