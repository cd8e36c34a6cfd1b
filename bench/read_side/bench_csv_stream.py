"""Streamed CSV export: rows/s against `psql COPY … TO STDOUT CSV`, and the server's peak memory for 100k
and for 1M rows.

Each export runs in a fresh gunicorn process (one gthread worker) so that the worker's VmHWM (peak resident
set size) belongs to that export alone; a small warm-up export runs first so both servers start from the
same imported, connected state. The 100k export is the same query limited by `submitted_before`.

    python bench/read_side/bench_csv_stream.py [--small 100000]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import (  # noqa: E402
    bench_institution_id, database_url, gunicorn, libpq_url, machine_note, memory_kib, new_api_key,
)

HERE = Path(__file__).resolve().parent

BASELINE_SQL = """
COPY (
  SELECT a.id, a.applicant_id, p.first_name, p.last_name, p.email, p.phone, a.program_id, pr.name,
         a.cycle_id, c.name, a.stage, a.decision, a.enrolled, a.submitted_at, a.submitted_by_staff,
         a.updated_at, a.paid, a.currency, a.amount
  FROM applications a
  JOIN applicants p ON p.id = a.applicant_id
  JOIN programs pr ON pr.id = a.program_id
  JOIN cycles c ON c.id = a.cycle_id
  WHERE a.institution_id = '{institution_id}'
  ORDER BY a.submitted_at, a.id
) TO STDOUT CSV
"""


def export_server(app: str = "export_app:app"):
    """gunicorn with one gthread worker for `app` (of this folder, or Karibu's): the main thread keeps
    heart-beating while a long export streams, which a sync worker would not do past its timeout."""
    return gunicorn(app, workers=1, threads=4, worker_class="gthread", timeout=300, pythonpath=HERE)


def submitted_before_for(institution_id: str, rows: int) -> str:
    """A `submitted_before` value that keeps the first `rows` applications of the institution."""
    with psycopg.connect(libpq_url(database_url())) as connection:
        row = connection.execute(
            "SELECT submitted_at FROM applications WHERE institution_id = %s "
            "ORDER BY submitted_at, id OFFSET %s LIMIT 1", (institution_id, rows)).fetchone()
    return row[0].isoformat() + "Z"


def psql_copy(institution_id: str) -> tuple[int, float]:
    started = time.perf_counter()
    completed = subprocess.run(
        ["psql", libpq_url(database_url()), "-X", "-q", "-c", BASELINE_SQL.format(institution_id=institution_id)],
        capture_output=True, check=True)
    elapsed = time.perf_counter() - started
    return completed.stdout.count(b"\n"), elapsed


def stream_export(base_url: str, api_key: str, params: dict) -> tuple[int, int, float]:
    """(data rows, bytes, seconds) of one streamed export read to the end."""
    started = time.perf_counter()
    lines = size = 0
    with requests.get(f"{base_url}/bench/export.csv", params=params, stream=True,
                      headers={"Authorization": f"Bearer {api_key}"}, timeout=600) as response:
        response.raise_for_status()
        for chunk in response.iter_content(chunk_size=1 << 16):
            lines += chunk.count(b"\n")
            size += len(chunk)
    return lines - 1, size, time.perf_counter() - started


def measure_export(api_key: str, params: dict, warm_up: dict) -> tuple[int, int, float, int]:
    """(rows, bytes, seconds, peak RSS KiB of the worker) in a fresh server."""
    with export_server() as server:
        stream_export(server.url, api_key, warm_up)
        rows, size, seconds = stream_export(server.url, api_key, params)
        [worker] = server.worker_pids()
        return rows, size, seconds, memory_kib(worker, "VmHWM")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=100_000, help="rows of the smaller export")
    args = parser.parse_args()

    institution_id = bench_institution_id()
    api_key = new_api_key(institution_id, "read-side bench")
    warm_up = {"submitted_before": submitted_before_for(institution_id, 1000)}
    small = {"submitted_before": submitted_before_for(institution_id, args.small)}

    small_rows, _, small_seconds, small_rss = measure_export(api_key, small, warm_up)
    # The machine is shared, so the baseline runs right before and right after the export; the export is
    # compared with their mean.
    copy_rows, copy_before = psql_copy(institution_id)
    all_rows, all_bytes, all_seconds, all_rss = measure_export(api_key, {}, warm_up)
    _, copy_after = psql_copy(institution_id)

    copy_seconds = (copy_before + copy_after) / 2
    server_rate = all_rows / all_seconds
    copy_rate = copy_rows / copy_seconds
    print(machine_note())
    print(f"psql COPY ... TO STDOUT CSV: {copy_rows:,} rows in {copy_before:.2f} s before and "
          f"{copy_after:.2f} s after the export = {copy_rate:,.0f} rows/s (mean)")
    print(f"streamed export over HTTP:   {all_rows:,} rows ({all_bytes / 1e6:.0f} MB) in {all_seconds:.2f} s "
          f"= {server_rate:,.0f} rows/s")
    print(f"export/COPY rate ratio: {server_rate / copy_rate:.2f} (target >= 0.5)")
    print(f"peak RSS of the gunicorn worker: {small_rows:,} rows -> {small_rss / 1024:.1f} MiB "
          f"({small_seconds:.2f} s); {all_rows:,} rows -> {all_rss / 1024:.1f} MiB")
    print(f"peak RSS ratio 1M/100k: {all_rss / small_rss:.3f} (target 0.9 .. 1.1)")


if __name__ == "__main__":
    main()
