"""Shared helpers of the load benchmarks: gunicorn servers on loopback (Karibu from a source tree, or the
minimal-Flask baseline), the bench database's key and institution, statistics and the load average."""
from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import requests

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BENCH_SECRET_KEY = "read-side-bench-secret-of-at-least-32-characters"
TRIAL_KEY = "sk_trial_demo"


def database_url() -> str:
    return os.environ.get("DATABASE_URL", "postgresql+psycopg://root@127.0.0.1:5432/karibu_bench")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def load_average() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def server_env(source: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url(), SECRET_KEY=os.environ.get("SECRET_KEY", BENCH_SECRET_KEY),
               REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
               API_RATE_LIMIT="100000000/minute", EDGE_SHARED_SECRET="", PYTHONPATH=str(source),
               LOG_LEVEL="WARNING")
    return env


def flask_cli(*args: str, source: Path = PROJECT_ROOT) -> dict:
    completed = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args, "--json"], cwd=source,
                               env=server_env(source), capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)


def bench_institution_id() -> str:
    import psycopg

    with psycopg.connect(database_url().replace("postgresql+psycopg://", "postgresql://")) as connection:
        row = connection.execute("SELECT institution_id FROM applications GROUP BY institution_id "
                                 "ORDER BY count(*) DESC LIMIT 1").fetchone()
    if row is None:
        raise SystemExit("the bench database holds no applications: run `flask --app wsgi seed-demo` first")
    return row[0]


def new_api_key(institution_id: str) -> str:
    return flask_cli("api-keys", "create", "--institution", institution_id, "--name", "load bench")["api_key"]


@contextmanager
def gunicorn(app: str, source: Path, *, workers: int, threads: int, worker_class: str = "gthread",
             extra_env: dict[str, str] | None = None):
    """A gunicorn serving `app` from `source` on a free loopback port; yields the base URL."""
    port = free_port()
    env = {**server_env(source), **(extra_env or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--threads", str(threads),
         "--worker-class", worker_class, "--bind", f"127.0.0.1:{port}", "--log-level", "warning", app],
        cwd=source, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(base, f"{app} from {source}")
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def wait_until_serving(base: str, what: str, seconds: float = 120) -> None:
    """Wait until `base`/healthz answers; SystemExit naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            requests.get(f"{base}/healthz", timeout=5)
            return
        except requests.RequestException:
            time.sleep(0.3)
    raise SystemExit(f"{what} did not start")


def spread(values: list[float], digits: int = 0) -> str:
    """min / median / max."""
    shown = [round(v, digits) if digits else round(v) for v in (min(values), statistics.median(values), max(values))]
    return " / ".join(f"{v:,}" for v in shown)
