"""The portal's .xlsx export: the server's peak memory for a small and a large export (10k and 100k rows by
default), interleaved, in a fresh gunicorn worker each, and the time to download.

Each export runs in its own gunicorn process, started with the production settings (`ops.gunicorn_config`:
gthread, so a long build does not trip the worker timeout) and one worker, so the worker's VmHWM (peak
resident set size) belongs to that export alone; a 100-row export runs first so every worker starts from the same
imported, connected state. The sizes are chosen with `submitted_before` on the list's own filter.

Usage (PostgreSQL database seeded with `flask --app wsgi seed-demo --applications 110000`):

    DATABASE_URL=postgresql://root@127.0.0.1:5432/karibu_bench_file \
    STAFF_EMAIL=admin@demo-university.ac.rw STAFF_PASSWORD=karibu-demo-2026 \
    python bench/portal/bench_xlsx_export.py [--small 10000] [--large 100000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import requests

from bench_pages import PROJECT_ROOT, free_port, sign_in

DEMO_INSTITUTION_NAME = "Demo University"


def submitted_before_for(rows: int) -> str:
    """A `submitted_before` date-time that keeps the first `rows` applications of Demo University."""
    dsn = os.environ["DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as connection:
        row = connection.execute(
            "SELECT a.submitted_at FROM applications a JOIN institutions i ON i.id = a.institution_id "
            "WHERE i.name = %s ORDER BY a.submitted_at, a.id OFFSET %s LIMIT 1",
            (DEMO_INSTITUTION_NAME, rows)).fetchone()
    if row is None:
        raise SystemExit(f"fewer than {rows} applications: seed more")
    return row[0].isoformat()


def start_server(port: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), WEB_CONCURRENCY="1", KARIBU_BIND=f"127.0.0.1:{port}",
               SECRET_KEY=os.environ.get("SECRET_KEY", "portal-bench-secret-of-at-least-32-characters"),
               PORTAL_LOGIN_RATE_LIMIT="1000/minute", PORTAL_LOGIN_ADDRESS_RATE_LIMIT="1000/minute")
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:ops.gunicorn_config", "wsgi:app"],
                              cwd=PROJECT_ROOT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            requests.get(f"http://127.0.0.1:{port}/login", timeout=10)
            return server
        except requests.RequestException:
            time.sleep(0.2)
    server.terminate()
    raise SystemExit("gunicorn did not start")


def worker_pid(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    if len(children) != 1:
        raise SystemExit(f"expected one gunicorn worker, found {children}")
    return int(children[0])


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


def download(session: requests.Session, url: str) -> tuple[int, int, float]:
    """(rows announced, bytes, seconds) of one export read to the end."""
    started = time.perf_counter()
    size = 0
    with session.get(url, stream=True, timeout=900) as response:
        response.raise_for_status()
        for chunk in response.iter_content(chunk_size=1 << 16):
            size += len(chunk)
        rows = int(response.headers["X-Total-Rows"])
    return rows, size, time.perf_counter() - started


def measure(before: str, warm_up: str) -> tuple[int, int, float, float]:
    """(rows, bytes, seconds, worker peak RSS MiB) of one export in a fresh server."""
    port = free_port()
    server = start_server(port)
    base = f"http://127.0.0.1:{port}"
    try:
        session = sign_in(base)
        download(session, f"{base}/applicants/export.xlsx?submitted_before={warm_up}")
        rows, size, seconds = download(session, f"{base}/applicants/export.xlsx?submitted_before={before}")
        return rows, size, seconds, peak_rss_mib(worker_pid(server.pid))
    finally:
        server.terminate()
        server.wait(timeout=30)


def spread(values: list[float]) -> str:
    return f"min {min(values):.1f} / median {statistics.median(values):.1f} / max {max(values):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    warm_up = submitted_before_for(100)
    sizes = {options.small: submitted_before_for(options.small), options.large: submitted_before_for(options.large)}
    results: dict[int, list[tuple[int, int, float, float]]] = {size: [] for size in sizes}
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    for round_number in range(options.rounds):
        for size, before in sizes.items():  # interleaved: small, large, small, large, …
            rows, size_bytes, seconds, rss = measure(before, warm_up)
            results[size].append((rows, size_bytes, seconds, rss))
            print(f"round {round_number + 1}: {rows:7d} rows  {size_bytes / 1e6:6.1f} MB  {seconds:6.1f} s  "
                  f"peak RSS {rss:6.1f} MiB", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    for size, runs in results.items():
        print(f"{size:7d} rows: peak RSS MiB {spread([run[3] for run in runs])}; "
              f"seconds {spread([run[2] for run in runs])}; rows/s {statistics.median(run[0] / run[2] for run in runs):.0f}")
    small, large = (statistics.median(run[3] for run in results[size]) for size in sizes)
    print(f"peak RSS of the large export vs the small one: {100 * (large - small) / small:+.1f}%")


if __name__ == "__main__":
    main()
