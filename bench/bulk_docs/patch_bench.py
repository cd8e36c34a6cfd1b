"""PATCH /api/v1/applications/update latency with 500 items on a large PostgreSQL database.

Needs a database already seeded with many applications (``seed-demo --applications
1000000``) and an API key of the institution that owns them. Starts gunicorn on
loopback against that database and sends sequential batches of 500 random
applications of the institution, each batch actually changing every row:

* ``stage``: a stage change only;
* ``decision``: a decision change with ``send_decision`` (decision rows and
  ``decision.sent`` events are written too).

Rows are updated, never deleted. Prints p50, p95 and max per scenario.

Usage:
  DATABASE_URL=postgresql+psycopg://root@127.0.0.1:5432/karibu_bench \\
  python bench/bulk_docs/patch_bench.py --institution ins_… --api-key sk_live_… [--requests 30]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import libpq_url, percentile, server_env  # noqa: E402
from zip_bench import REDIS_URL, sync_server  # noqa: E402

BATCH = 500
DECISIONS = ["accepted", "waitlisted", "rejected", "deferred"]


def sample_ids(database_url: str, institution_id: str, count: int) -> tuple[list[str], list[str], int]:
    with psycopg.connect(libpq_url(database_url)) as connection:
        rows = connection.execute(
            "SELECT id FROM applications TABLESAMPLE SYSTEM (5) WHERE institution_id = %s",
            (institution_id,),
        ).fetchall()
        stages = [r[0] for r in connection.execute(
            "SELECT key FROM stages WHERE institution_id = %s ORDER BY position", (institution_id,))]
        total = connection.execute(
            "SELECT count(*) FROM applications WHERE institution_id = %s", (institution_id,)).fetchone()[0]
    ids = [r[0] for r in rows]
    random.shuffle(ids)
    if len(ids) < count:
        raise SystemExit(f"only {len(ids)} sampled ids, need {count}")
    return ids[:count], stages, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--institution", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--requests", type=int, default=30, help="batches per scenario")
    args = parser.parse_args()
    database_url = os.environ["DATABASE_URL"]

    ids, stages, total = sample_ids(database_url, args.institution, BATCH * args.requests)
    batches = [ids[i * BATCH:(i + 1) * BATCH] for i in range(args.requests)]
    scenarios = {
        "stage": lambda batch, turn: [
            {"id": i, "stage": stages[turn % len(stages)]} for i in batch],
        "decision+send": lambda batch, turn: [
            {"id": i, "decision": DECISIONS[turn % len(DECISIONS)], "send_decision": True}
            for i in batch],
    }
    headers = {"Authorization": f"Bearer {args.api_key}"}
    print(f"institution applications: {total}; {args.requests} batches of {BATCH} per scenario")
    with sync_server(server_env(database_url, REDIS_URL=REDIS_URL)) as server, requests.Session() as session:
        session.patch(f"{server.url}/api/v1/applications/update", headers=headers,
                      json={"updates": [{"id": ids[0], "enrolled": False}]}, timeout=60)
        for name, build in scenarios.items():
            timings = []
            for turn, batch in enumerate(batches):
                body = {"updates": build(batch, turn + int(time.time()))}
                started = time.perf_counter()
                response = session.patch(f"{server.url}/api/v1/applications/update",
                                         headers=headers, json=body, timeout=120)
                timings.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    raise SystemExit(f"{name}: HTTP {response.status_code}: {response.text[:500]}")
            print(f"{name:14s} p50 {statistics.median(timings):7.1f} ms   "
                  f"p95 {percentile(timings, 0.95):7.1f} ms   max {max(timings):7.1f} ms")


if __name__ == "__main__":
    main()
