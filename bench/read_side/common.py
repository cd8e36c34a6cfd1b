"""Shared helpers of the read-side benchmarks: a gunicorn server on loopback, an API key, statistics.

Every benchmark talks HTTP to a real gunicorn process on 127.0.0.1, started here with the project's app
factory and the database named by DATABASE_URL (default: the 1M-application `karibu_bench` database).
"""
from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

PROJECT_ROOT = Path(__file__).resolve().parents[2]
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))
DEFAULT_DATABASE_URL = "postgresql+psycopg://root@127.0.0.1:5432/karibu_bench"
BENCH_SECRET_KEY = "read-side-bench-secret-of-at-least-32-characters"


def database_url() -> str:
    return os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)


def psql_dsn() -> str:
    """The DATABASE_URL in the form psql and psycopg accept."""
    return database_url().replace("postgresql+psycopg://", "postgresql://")


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        SECRET_KEY=os.environ.get("SECRET_KEY", BENCH_SECRET_KEY),
        # The benchmarks measure the application, not the rate limiter.
        API_RATE_LIMIT=os.environ.get("API_RATE_LIMIT", "1000000/minute"),
        EDGE_SHARED_SECRET="",
        PYTHONPATH=str(PROJECT_ROOT),
    )
    return env


def flask_cli(*args: str) -> dict:
    """Run `flask --app wsgi <args> --json` against the bench database and parse its JSON output."""
    completed = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", *args, "--json"],
        cwd=PROJECT_ROOT, env=server_env(), capture_output=True, text=True, check=True,
    )
    return json.loads(completed.stdout)


def bench_institution_id() -> str:
    """The institution holding the most applications (the seeded one), unless BENCH_INSTITUTION_ID is set."""
    chosen = os.environ.get("BENCH_INSTITUTION_ID")
    if chosen:
        return chosen
    import psycopg

    with psycopg.connect(psql_dsn()) as connection:
        row = connection.execute(
            "SELECT institution_id FROM applications GROUP BY institution_id ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
    if row is None:
        raise SystemExit("the bench database holds no applications: run `flask --app wsgi seed-demo` first")
    return row[0]


def new_api_key(institution_id: str) -> str:
    return flask_cli("api-keys", "create", "--institution", institution_id, "--name", "read-side bench")["api_key"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    base_url: str
    process: subprocess.Popen

    def worker_pids(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return [int(pid) for pid in children]


@contextmanager
def gunicorn_server(wsgi_target: str = "wsgi:create_app()", workers: int = 1, threads: int = 4):
    """A gunicorn server on a free loopback port; stopped (only the process started here) on exit.

    gthread workers: the main thread keeps heart-beating while a long CSV stream is being written, which a
    sync worker would not do past its timeout.
    """
    port = free_port()
    command = [
        sys.executable, "-m", "gunicorn", wsgi_target,
        "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
        "--worker-class", "gthread", "--threads", str(threads), "--timeout", "300",
        "--log-level", "warning", "--pythonpath", str(Path(__file__).parent),
    ]
    process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=server_env())
    server = Server(base_url=f"http://127.0.0.1:{port}", process=process)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise SystemExit(f"gunicorn exited with {process.returncode}")
            try:
                requests.get(f"{server.base_url}/api/v1/openapi.json", timeout=10)
                break
            except requests.RequestException:
                if time.monotonic() > deadline:
                    raise SystemExit("gunicorn did not start within 60 s") from None
                time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def peak_rss_kib(pid: int) -> int:
    """VmHWM: the highest resident set size the process has had since it started."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for pid {pid}")


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(samples: list[float]) -> str:
    return (
        f"n={len(samples)} p50={statistics.median(samples) * 1000:.1f} ms "
        f"p95={percentile(samples, 0.95) * 1000:.1f} ms min={min(samples) * 1000:.1f} ms"
    )


def machine_note() -> str:
    load = os.getloadavg()
    return (
        f"machine: {os.cpu_count()} cores shared with other work (load average {load[0]:.2f}); "
        "client, gunicorn and PostgreSQL on the same host over loopback"
    )
