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
import statistics
import sys
import time
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import database_url, libpq_url, load_average, memory_kib, spread  # noqa: E402
from bench_pages import portal_server, staff_session  # noqa: E402 (same folder)

DEMO_INSTITUTION_NAME = "Demo University"


def submitted_before_for(rows: int) -> str:
    """A `submitted_before` date-time that keeps the first `rows` applications of Demo University."""
    with psycopg.connect(libpq_url(database_url())) as connection:
        row = connection.execute(
            "SELECT a.submitted_at FROM applications a JOIN institutions i ON i.id = a.institution_id "
            "WHERE i.name = %s ORDER BY a.submitted_at, a.id OFFSET %s LIMIT 1",
            (DEMO_INSTITUTION_NAME, rows)).fetchone()
    if row is None:
        raise SystemExit(f"fewer than {rows} applications: seed more")
    return row[0].isoformat()


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
    with portal_server(1, deployed=True) as server:
        session = staff_session(server.url)
        download(session, f"{server.url}/applicants/export.xlsx?submitted_before={warm_up}")
        rows, size, seconds = download(session, f"{server.url}/applicants/export.xlsx?submitted_before={before}")
        [worker] = server.worker_pids()
        return rows, size, seconds, memory_kib(worker, "VmHWM") / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    warm_up = submitted_before_for(100)
    sizes = {options.small: submitted_before_for(options.small), options.large: submitted_before_for(options.large)}
    results: dict[int, list[tuple[int, int, float, float]]] = {size: [] for size in sizes}
    print(f"load average at start: {load_average()}", flush=True)
    for round_number in range(options.rounds):
        for size, before in sizes.items():  # interleaved: small, large, small, large, …
            rows, size_bytes, seconds, rss = measure(before, warm_up)
            results[size].append((rows, size_bytes, seconds, rss))
            print(f"round {round_number + 1}: {rows:7d} rows  {size_bytes / 1e6:6.1f} MB  {seconds:6.1f} s  "
                  f"peak RSS {rss:6.1f} MiB", flush=True)
    print(f"load average at end: {load_average()}")
    for size, runs in results.items():
        print(f"{size:7d} rows: peak RSS MiB {spread([run[3] for run in runs], 1, labels=True)}; "
              f"seconds {spread([run[2] for run in runs], 1, labels=True)}; rows/s {statistics.median(run[0] / run[2] for run in runs):.0f}")
    small, large = (statistics.median(run[3] for run in results[size]) for size in sizes)
    print(f"peak RSS of the large export vs the small one: {100 * (large - small) / small:+.1f}%")


if __name__ == "__main__":
    main()
