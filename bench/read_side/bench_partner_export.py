"""Issue #12's partner export: `GET /api/v1/applications/export` of 1M rows over HTTP vs `psql \\copy`.

For each run, interleaved: `psql COPY (the same join, plain columns) TO STDOUT CSV`, then the API export as
CSV and as NDJSON, each read to the end from a fresh gunicorn (one gthread worker, so its peak RSS belongs to
that export alone), after a small warm-up export. Prints rows/s and the ratio to COPY of the same run
(target ≥ 0.5) as min / median / max, and the worker's peak RSS for `--small` rows and for all of them
(target: flat, 100k → 1M). Every figure counts the records received, never what a header promises, and
checks that they equal `X-Total-Rows`.

    DATABASE_URL=postgresql://…/karibu_bench python bench/read_side/bench_partner_export.py [--runs 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_csv_stream import export_server, psql_copy, submitted_before_for  # noqa: E402

from bench.harness import bench_institution_id, machine_note, memory_kib, new_api_key, spread  # noqa: E402

EXPORT_PATH = "/api/v1/applications/export"


def exported(base_url: str, api_key: str, params: dict) -> tuple[int, float]:
    """(records received, seconds) of one export read to the end."""
    started = time.perf_counter()
    newlines = 0
    with requests.get(base_url + EXPORT_PATH, params=params, stream=True, timeout=900,
                      headers={"Authorization": f"Bearer {api_key}"}) as response:
        response.raise_for_status()
        promised = int(response.headers["X-Total-Rows"])
        for chunk in response.iter_content(chunk_size=1 << 16):
            newlines += chunk.count(b"\n")
    records = newlines - 1 if params.get("format", "csv") == "csv" else newlines
    if records != promised:  # the bench's names and addresses hold no line breaks
        raise SystemExit(f"received {records} records, X-Total-Rows said {promised}")
    return records, time.perf_counter() - started


def measure(api_key: str, params: dict, warm_up: dict) -> tuple[int, float, int]:
    """(records, seconds, peak RSS KiB of the worker) in a fresh server."""
    with export_server("wsgi:create_app()") as server:
        exported(server.url, api_key, {**warm_up, "format": params.get("format", "csv")})
        records, seconds = exported(server.url, api_key, params)
        [worker] = server.worker_pids()
        return records, seconds, memory_kib(worker, "VmHWM")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--small", type=int, default=100_000, help="rows of the smaller export (memory)")
    options = parser.parse_args()

    institution_id = bench_institution_id()
    api_key = new_api_key(institution_id, "read-side bench")
    warm_up = {"submitted_before": submitted_before_for(institution_id, 1000)}
    print(machine_note())
    figures: dict[str, list[float]] = {}
    for run in range(1, options.runs + 1):
        copy_rows, copy_seconds = psql_copy(institution_id)
        figures.setdefault("copy rows/s", []).append(copy_rows / copy_seconds)
        line = f"run {run}: COPY {copy_rows:,} rows {copy_seconds:.2f} s"
        for output in ("csv", "ndjson"):
            records, seconds, _ = measure(api_key, {"format": output}, warm_up)
            rate = records / seconds
            figures.setdefault(f"{output} rows/s", []).append(rate)
            figures.setdefault(f"{output} / COPY", []).append(rate / (copy_rows / copy_seconds))
            line += f"; {output} {records:,} rows {seconds:.2f} s"
        print(line, flush=True)

    small = {"submitted_before": submitted_before_for(institution_id, options.small), "format": "csv"}
    small_records, _, small_rss = measure(api_key, small, warm_up)
    all_records, _, all_rss = measure(api_key, {"format": "csv"}, warm_up)

    print("\nmin / median / max")
    for name, values in figures.items():
        print(f"  {name:14} {spread(values, 0 if 'rows/s' in name else 2)}")
    print("  target: csv and ndjson / COPY >= 0.5")
    print(f"peak RSS of the worker: {small_records:,} rows {small_rss / 1024:.1f} MiB, {all_records:,} rows "
          f"{all_rss / 1024:.1f} MiB (ratio {all_rss / small_rss:.3f}; target flat)")
    print(machine_note())


if __name__ == "__main__":
    main()
