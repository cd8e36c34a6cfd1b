"""Retention on a large backlog: delete 1M expired audit rows while API writes go on, and measure the longest
write stall (the slowest `PATCH /api/v1/applications/update`, which also writes an audit row) during the purge
against the slowest before it.

    .venv/bin/python bench/production/retention_stall.py [--rows 1000000] [--writers 2] [--batch 5000]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import flask_json, libpq_url, machine_note, migrated_database, percentile  # noqa: E402
from metrics_overhead import REDIS_URL, SECRET_KEY, environment, seed, served  # noqa: E402


def fill_expired_audit_rows(url: str, rows: int) -> None:
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        connection.execute("""
            INSERT INTO audit_log (created_at, request_id, institution_id, actor, source, action, target, method,
                                   path, query, status, duration_ms, client_ip, user_agent)
            SELECT now() - interval '800 days' + (n * interval '1 second'), md5(n::text), 'ins_bench', 'key_bench',
                   'api', 'api.list_applications', '', 'GET', '/api/v1/applications', 'limit=50', 200, 12,
                   '127.0.0.1', 'bench'
            FROM generate_series(1, %s) AS n""", (rows,))
        connection.execute("ANALYZE audit_log")


class Writers:
    """Threads that PATCH one application's stage back and forth and record each request's latency."""

    def __init__(self, base: str, key: str, application_ids: list[str], stages: list[str], count: int):
        self.base, self.key, self.ids, self.stages = base, key, application_ids, stages
        self.samples: list[tuple[float, float]] = []  # (start time, latency)
        self.running = True
        self.threads = [threading.Thread(target=self._write, args=(n,)) for n in range(count)]

    def _write(self, number: int) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.key}"
        turn = 0
        while self.running:
            turn += 1
            body = {"updates": [{"id": self.ids[number], "stage": self.stages[turn % len(self.stages)]}]}
            started = time.monotonic()
            response = session.patch(self.base + "/api/v1/applications/update", json=body)
            self.samples.append((started, time.monotonic() - started))
            assert response.status_code == 200, response.text

    def start(self):
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.running = False
        for thread in self.threads:
            thread.join()

    def between(self, start: float, end: float) -> list[float]:
        return [latency for started, latency in self.samples if start <= started < end]


class LockWaits:
    """Samples pg_stat_activity every 10 ms: the longest time any backend was seen waiting on a lock."""

    def __init__(self, url: str):
        self.dsn = libpq_url(url)
        self.longest = 0.0
        self.running = True
        self.thread = threading.Thread(target=self._sample)

    def _sample(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            while self.running:
                row = connection.execute(
                    "SELECT coalesce(max(extract(epoch FROM clock_timestamp() - state_change)), 0) "
                    "FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                ).fetchone()
                self.longest = max(self.longest, float(row[0]))
                time.sleep(0.01)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--baseline-seconds", type=float, default=20)
    args = parser.parse_args()
    with migrated_database("karibu_bench_production", SECRET_KEY=SECRET_KEY, REDIS_URL=REDIS_URL) as url:
        seeded = seed(url, 20)
        started = time.monotonic()
        fill_expired_audit_rows(url, args.rows)
        print(f"{args.rows} expired audit rows written in {time.monotonic() - started:.1f} s", flush=True)
        with psycopg.connect(libpq_url(url)) as connection:
            ids = [row[0] for row in connection.execute(
                "SELECT id FROM applications ORDER BY id LIMIT %s", (args.writers,))]
            stages = [row[0] for row in connection.execute(
                "SELECT key FROM stages WHERE institution_id = %s ORDER BY position LIMIT 2",
                (seeded["institution_id"],))]
        with served(url) as server:
            writers = Writers(server.url, seeded["api_key"], ids, stages, args.writers)
            writers.start()
            baseline_start = time.monotonic()
            time.sleep(args.baseline_seconds)
            purge_start = time.monotonic()
            with LockWaits(url) as lock_waits:
                purge = flask_json("retention", "run", env=environment(url, RETENTION_BATCH_SIZE=str(args.batch)))
            purge_end = time.monotonic()
            writers.stop()
        report = {kind["kind"]: kind["deleted"] for kind in purge["kinds"]}
        before = writers.between(baseline_start, purge_start)
        during = writers.between(purge_start, purge_end)
        print(f"purge: {report} in {purge_end - purge_start:.1f} s "
              f"({report['audit_log'] / (purge_end - purge_start):,.0f} rows/s, batches of {args.batch})")
        for name, samples in (("before the purge", before), ("during the purge", during)):
            print(f"API writes {name}: n={len(samples)} p50={statistics.median(samples) * 1000:.1f} ms "
                  f"p99={percentile(samples, 0.99) * 1000:.1f} ms longest={max(samples) * 1000:.1f} ms")
        print(f"longest lock wait of any database session during the purge: {lock_waits.longest * 1000:.1f} ms "
              f"(sampled every 10 ms)")
        print(f"longest write stall attributable to the purge: "
              f"{max(0.0, max(during) - max(before)) * 1000:.1f} ms beyond the longest write before it "
              f"(target: no write blocked more than 100 ms)")
        print(machine_note())


if __name__ == "__main__":
    main()
