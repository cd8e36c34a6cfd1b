"""Webhook dispatch latency with an idle worker: prints figures, asserts nothing.

From the start of the commit that emits an event to the first byte of the request at the receiver, p50 and
p99 over `--samples` events (goal p99 <= 200 ms), one `flask --app wsgi worker` process waiting for work.
Throughput against a bare loop of signed POSTs, 4 workers against 1 and the 10 s receiver are measured by
`bench_workers.py`, whose receiver process (trustme certificates, 127.0.0.1 only) this one uses too.
Usage (from the repository root, Redis running):

    python bench/webhooks/bench_delivery.py [--samples 200]
        [--database-url postgresql://...] [--redis-url redis://127.0.0.1:6379/6]

The Redis database given is flushed. Without --database-url a temporary SQLite file is used.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.harness import percentile  # noqa: E402
from bench.webhooks.bench_workers import ReceiverProcess, bench_environment, start_workers, stop_workers  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--database-url", default=os.environ.get("KARIBU_BENCH_DATABASE_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("KARIBU_BENCH_REDIS_URL", "redis://127.0.0.1:6379/6"))
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="karibu-bench-")
    receiver = ReceiverProcess(workdir)
    environment = bench_environment(args, workdir, receiver)

    import redis
    from flask_migrate import upgrade

    from core.events import emission
    from core.db import db
    from core.institutions import create_institution
    from core.scoping import InstitutionScope
    from core.webhooks.endpoints import save_endpoint
    from wsgi import create_app

    redis.Redis.from_url(args.redis_url).flushdb()
    app = create_app()
    workers = []
    try:
        with app.app_context():
            upgrade(directory=str(ROOT / "migrations"))
            institution = create_institution(f"Bench University {time.time_ns()}")
            save_endpoint(InstitutionScope(institution.id), receiver.url(0))
            print(f"Webhook dispatch latency ({db.engine.dialect.name}, {os.cpu_count()} cores shared "
                  f"with the receiver and other work on this machine)")

            workers = start_workers(environment, 1)
            time.sleep(3)  # let the worker start and go idle
            latencies = []
            for _ in range(args.samples):
                event = emission.emit_webhook_test(InstitutionScope(institution.id))
                committed_at = time.time()
                db.session.commit()
                [arrival] = receiver.collect(1, timeout=30)
                assert arrival.event_id == event.id, (arrival.event_id, event.id)
                latencies.append((arrival.first_byte_at - committed_at) * 1000)
                time.sleep(0.05)
            p50, p99 = statistics.median(latencies), percentile(latencies, 0.99)
            print(f"commit -> first byte, idle worker: p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
                  f"max {max(latencies):6.1f} ms  ({len(latencies)} samples; goal p99 <= 200 ms)")
    finally:
        stop_workers(workers)
        receiver.stop()


if __name__ == "__main__":
    main()
