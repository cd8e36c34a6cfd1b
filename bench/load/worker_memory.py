"""Issue #12's memory goal: the RSS of a gunicorn worker at rest (target ≤ 90 MiB), from a source tree.

Starts gunicorn exactly as deployed (`-c python:ops.gunicorn_config`, so the worker count, threads and
metrics directory of production) on a free loopback port, against the bench database, and prints each
worker's RSS and PSS (its share of pages it has in common with the master and the other workers):

- at start: the workers answered /healthz once and then sat idle for a few seconds;
- after traffic: `--requests` of each of the API list, the trial verification, the OpenAPI document and the
  staff sign-in page, then idle again (what a worker holds once each area has loaded what it loads lazily).

    DATABASE_URL=postgresql+psycopg://…/karibu_bench python bench/load/worker_memory.py \\
        [--tree before=/tmp/karibu-main] [--tree after=.] [--requests 200]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.load.common import (  # noqa: E402
    PROJECT_ROOT, TRIAL_KEY, bench_institution_id, free_port, load_average, new_api_key, server_env,
    wait_until_serving,
)

VERIFICATION_BODY = json.dumps({"issuer": "NESA", "national_id": "1200270014582031", "exam_number": "0103020117",
                                "level": "P-Level"})


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in KiB."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":"):
                fields[parts[0][:-1]] = int(parts[1]) if parts[1].isdigit() else 0
    return fields["Rss"], fields["Pss"]


def worker_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return sorted(int(pid) for pid in children)


def report(label: str, master: int) -> list[float]:
    rss_values = []
    for pid in worker_pids(master):
        rss, pss = memory_kib(pid)
        rss_values.append(rss / 1024)
        print(f"  {label:14} worker {pid}: RSS {rss / 1024:6.1f} MiB  PSS {pss / 1024:6.1f} MiB")
    return rss_values


def measure(name: str, source: Path, api_key: str, requests_count: int, workers: int) -> dict[str, list[float]]:
    port = free_port()
    env = {**server_env(source), "WEB_CONCURRENCY": str(workers)}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:ops.gunicorn_config", "--bind", f"127.0.0.1:{port}",
         "wsgi:app"], cwd=source, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(base, f"{name}: gunicorn")
        while len(worker_pids(process.pid)) < workers:
            time.sleep(0.2)
        time.sleep(3)
        print(f"{name} ({source})")
        at_start = report("at start", process.pid)
        session = requests.Session()
        live = {"Authorization": f"Bearer {api_key}"}
        trial = {"Authorization": f"Bearer {TRIAL_KEY}", "Content-Type": "application/json"}
        for _ in range(requests_count):
            session.get(f"{base}/api/v1/applications?limit=50", headers=live, timeout=60).raise_for_status()
            session.post(f"{base}/api/v1/verifications", headers=trial, data=VERIFICATION_BODY, timeout=60)
            session.get(f"{base}/api/v1/openapi.json", timeout=60).raise_for_status()
            session.get(f"{base}/login", timeout=60).raise_for_status()
        time.sleep(3)
        after = report("after traffic", process.pid)
        return {"start": at_start, "after": after}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a Karibu source tree")
    parser.add_argument("--requests", type=int, default=200, help="requests of each kind between the readings")
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    trees = [tuple(item.split("=", 1)) for item in options.tree] or [("karibu", str(PROJECT_ROOT))]
    api_key = new_api_key(bench_institution_id())
    print(f"load average {load_average()}")
    results = {name: measure(name, Path(path).resolve(), api_key, options.requests, options.workers)
               for name, path in trees}
    print("\nlargest worker RSS (MiB): target at rest ≤ 90")
    for name, figures in results.items():
        print(f"  {name:10} at start {max(figures['start']):6.1f}   after traffic {max(figures['after']):6.1f}")
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
