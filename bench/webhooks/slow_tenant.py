"""One institution's slow receiver beside another's instant one, on one worker, over minutes: prints the instant
one's delivery lag alone and beside the slow one.

Goal (issue 38): with a receiver answering after 9 s at 1 event/s beside an instant one at 2 events/s for 100 s,
the instant one's lag stays p95 <= 2x its p95 alone, and never above 2 s. Each round measures the instant
receiver alone, then beside the slow one, each for `--seconds`; min/median/max over rounds are printed with the
load average. The lag of an event is from its commit to the first byte of its request at the receiver.

Usage (from the repository root, Redis and PostgreSQL running; the Redis database given is flushed):

    python bench/webhooks/slow_tenant.py [--rounds 3] [--seconds 100] [--database-url postgresql://...] \
        [--redis-url redis://127.0.0.1:6379/6]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.harness import load_average, migrated_database, percentile, spread  # noqa: E402
from bench.webhooks.bench_workers import (  # noqa: E402
    ReceiverProcess,
    bench_environment,
    finish_all,
    release_leases,
    start_workers,
    stop_workers,
)

SLOW_MS, SLOW_PER_SECOND, INSTANT_PER_SECOND = 9_000, 1, 2


def emit_one(institution_id: str) -> tuple[str, float]:
    """One test event, committed; (its id, the unix time of the commit)."""
    from core.db import db
    from core.events import emission
    from core.scoping import InstitutionScope

    event = emission.emit_webhook_test(InstitutionScope(institution_id))
    db.session.commit()
    return event.id, time.time()


def instant_lags(environment, receiver, slow_id: str | None, instant_id: str, seconds: float) -> list[float]:
    """Lags of the instant receiver's events emitted at INSTANT_PER_SECOND for `seconds` on a fresh worker, with
    the slow receiver's at SLOW_PER_SECOND beside them when `slow_id`."""
    workers = start_workers(environment, 1)
    try:
        time.sleep(3)
        warm_id, _ = emit_one(instant_id)
        while warm_id not in {a.event_id for a in receiver.collect(1, timeout=60)}:
            pass
        emitted: dict[str, float] = {}
        started = time.monotonic()
        tick = 1 / INSTANT_PER_SECOND
        for number in range(int(seconds / tick)):
            time.sleep(max(0.0, started + number * tick - time.monotonic()))
            event_id, at = emit_one(instant_id)
            emitted[event_id] = at
            if slow_id is not None and number % (INSTANT_PER_SECOND // SLOW_PER_SECOND) == 0:
                emit_one(slow_id)
        first_byte: dict[str, float] = {}
        deadline = time.monotonic() + 120
        while not set(emitted) <= set(first_byte) and time.monotonic() < deadline:
            for arrival in receiver.collect(1, timeout=max(1.0, deadline - time.monotonic())):
                if arrival.path == "/delay/0":
                    first_byte.setdefault(arrival.event_id, arrival.first_byte_at)
        return [first_byte[event_id] - at for event_id, at in emitted.items()]
    finally:
        stop_workers(workers)
        release_leases()
        finish_all(receiver)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=100.0)
    parser.add_argument("--database-url", default=os.environ.get("KARIBU_BENCH_DATABASE_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("KARIBU_BENCH_REDIS_URL", "redis://127.0.0.1:6379/6"))
    args = parser.parse_args()
    if args.database_url:
        run(args)
    else:
        with migrated_database("karibu_bench_slow_tenant") as url:
            args.database_url = url
            run(args)


def run(args) -> None:
    workdir = tempfile.mkdtemp(prefix="karibu-bench-")
    receiver = ReceiverProcess(workdir)
    environment = bench_environment(args, workdir, receiver)

    import redis
    from flask_migrate import upgrade

    from core.institutions import create_institution
    from core.scoping import InstitutionScope
    from core.webhooks.endpoints import save_endpoint
    from wsgi import create_app

    redis.Redis.from_url(args.redis_url).flushdb()
    app = create_app()
    figures: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)
        print(f"  {name}: {value:.3f}", flush=True)

    try:
        with app.app_context():
            upgrade(directory=str(ROOT / "migrations"))
            ids = {}
            for delay_ms in (0, SLOW_MS):
                institution = create_institution(f"Bench University {delay_ms} ms {time.time_ns()}")
                save_endpoint(InstitutionScope(institution.id), receiver.url(delay_ms))
                ids[delay_ms] = institution.id
            print(f"A {SLOW_MS / 1000:g} s receiver at {SLOW_PER_SECOND}/s beside an instant one at "
                  f"{INSTANT_PER_SECOND}/s for {args.seconds:g} s on one worker ({os.cpu_count()} cores shared with "
                  f"the receiver, the database and other work); load average {load_average()}", flush=True)
            for round_number in range(1, args.rounds + 1):
                print(f"round {round_number}", flush=True)
                alone = instant_lags(environment, receiver, None, ids[0], args.seconds)
                beside = instant_lags(environment, receiver, ids[SLOW_MS], ids[0], args.seconds)
                record("alone: instant lag p50 s", percentile(alone, 0.5))
                record("alone: instant lag p95 s", percentile(alone, 0.95))
                record("alone: instant lag max s", max(alone))
                record("beside 9 s: instant lag p50 s", percentile(beside, 0.5))
                record("beside 9 s: instant lag p95 s", percentile(beside, 0.95))
                record("beside 9 s: instant lag max s (goal <= 2)", max(beside))
                record("p95 beside / alone (goal <= 2)",
                       percentile(beside, 0.95) / max(percentile(alone, 0.95), 1e-3))
                print(f"  load average {load_average()}", flush=True)
    finally:
        receiver.stop()

    print("\nsummary over rounds (min / median / max):")
    for name, values in figures.items():
        print(f"  {name:44s} {spread(values, 3, labels=True, separator='  ')}")
    print(f"load average at the end {load_average()}")


if __name__ == "__main__":
    main()
