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
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import (  # noqa: E402
    PROJECT_ROOT, TRIAL_KEY, Server, bench_institution_id, gunicorn, load_average, new_api_key, rss_pss_kib,
    server_env,
)

VERIFICATION_BODY = json.dumps({"issuer": "NESA", "national_id": "1200270014582031", "exam_number": "0103020117",
                                "level": "P-Level"})


def report(label: str, server: Server) -> list[float]:
    rss_values = []
    for pid in server.worker_pids():
        rss, pss = rss_pss_kib(pid)
        rss_values.append(rss / 1024)
        print(f"  {label:14} worker {pid}: RSS {rss / 1024:6.1f} MiB  PSS {pss / 1024:6.1f} MiB")
    return rss_values


def measure(name: str, source: Path, api_key: str, requests_count: int, workers: int) -> dict[str, list[float]]:
    env = server_env(source=source, WEB_CONCURRENCY=str(workers))
    with gunicorn("wsgi:app", env=env, source=source, deployed=True) as server:
        base = server.url
        while len(server.worker_pids()) < workers:
            time.sleep(0.2)
        time.sleep(3)
        print(f"{name} ({source})")
        at_start = report("at start", server)
        session = requests.Session()
        live = {"Authorization": f"Bearer {api_key}"}
        trial = {"Authorization": f"Bearer {TRIAL_KEY}", "Content-Type": "application/json"}
        for _ in range(requests_count):
            session.get(f"{base}/api/v1/applications?limit=50", headers=live, timeout=60).raise_for_status()
            session.post(f"{base}/api/v1/verifications", headers=trial, data=VERIFICATION_BODY, timeout=60)
            session.get(f"{base}/api/v1/openapi.json", timeout=60).raise_for_status()
            session.get(f"{base}/login", timeout=60).raise_for_status()
        time.sleep(3)
        after = report("after traffic", server)
        return {"start": at_start, "after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a Karibu source tree")
    parser.add_argument("--requests", type=int, default=200, help="requests of each kind between the readings")
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    trees = [tuple(item.split("=", 1)) for item in options.tree] or [("karibu", str(PROJECT_ROOT))]
    api_key = new_api_key(bench_institution_id(), "load bench")
    print(f"load average {load_average()}")
    results = {name: measure(name, Path(path).resolve(), api_key, options.requests, options.workers)
               for name, path in trees}
    print("\nlargest worker RSS (MiB): target at rest ≤ 90")
    for name, figures in results.items():
        print(f"  {name:10} at start {max(figures['start']):6.1f}   after traffic {max(figures['after']):6.1f}")
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
