"""Events feed at scale on PostgreSQL: a page at depth ~900,000 against the first page, and an empty poll.

Makes a private database (dropped at the end unless --keep), migrates it, writes `--events` events for one
institution in transactions of 10,000 (so they span many transaction ids, as real writes do) plus 10% for a
second institution, then times requests through the app in this process: the Flask test client, so the
figures are server time (routing, authentication, rate limit, the query, JSON, the audit row), without the
network. The deep cursor is minted with the server's own cursor code for the event at that depth.

    python bench/events/bench_feed.py [--events 1000000] [--depth 900000] [--limit 100] [--rounds 200] [--keep]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    BENCH_SECRET_KEY, load_average, percentile, sqlalchemy_url, throwaway_database,
)

BATCH = 10_000
INSERT_BATCH = """
INSERT INTO events (id, institution_id, type, occurred_at, payload, subject_id)
SELECT 'evt_' || substr(md5(:salt || n::text), 1, 20), CAST(:institution_id AS text), 'webhook.test',
       now() at time zone 'utc' - make_interval(secs => CAST(:total AS int) - CAST(:first AS int) - n),
       json_build_object('message', 'This is a test event from Karibu.', 'institution_id', CAST(:institution_id AS text)),
       NULL
FROM generate_series(1, :count) AS n
"""


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def summary(samples: list[float]) -> str:
    return (f"p50 {ms(statistics.median(samples))}, p90 {ms(percentile(samples, 0.9))}, "
            f"p99 {ms(percentile(samples, 0.99))} ({len(samples)} requests)")


def seed(engine, institution_id: str, total: int, salt: str) -> float:
    started = time.perf_counter()
    for first in range(0, total, BATCH):
        with engine.begin() as connection:  # one transaction per batch: distinct transaction ids
            connection.execute(text(INSERT_BATCH), {
                "salt": f"{salt}-{first}", "institution_id": institution_id, "total": total, "first": first,
                "count": min(BATCH, total - first)})
        if (first // BATCH) % 20 == 0:
            print(f"  {first + BATCH:>9,} events written", flush=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=900_000)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep the database (its name is printed)")
    args = parser.parse_args()

    with throwaway_database("karibu_bench_events", keep=args.keep) as database_url:
        run(args, sqlalchemy_url(database_url))


def run(args, database_url: str) -> None:
    from flask_migrate import upgrade

    from core.events.feed import parse_event_query
    from core.db import db
    from core.institutions import create_institution
    from core.accounts.api_keys import create_api_key
    from core.applications.listing.cursor import encode_cursor
    from core.scoping import InstitutionScope
    from wsgi import create_app

    app = create_app({"SQLALCHEMY_DATABASE_URI": database_url, "SECRET_KEY": BENCH_SECRET_KEY,
                      "API_RATE_LIMIT": "1000000/minute", "RATELIMIT_STORAGE_URI": "memory://",
                      "REDIS_URL": os.environ.get("KARIBU_BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")})
    with app.app_context():
        upgrade(directory=str(ROOT / "migrations"))
        institution = create_institution("Bench University")
        other = create_institution("Other University")
        _, raw_key = create_api_key(InstitutionScope(institution.id), name="bench")
        institution_id, other_id = institution.id, other.id
        engine = db.engine
    print(f"writing {args.events:,} events (+{args.events // 10:,} of another institution)…", flush=True)
    seconds = seed(engine, institution_id, args.events, "a") + seed(engine, other_id, args.events // 10, "b")
    with engine.begin() as connection:
        connection.execute(text("ANALYZE events"))
        position = connection.execute(text(
            "SELECT xact_id, seq FROM events WHERE institution_id = :i ORDER BY xact_id, seq OFFSET :d LIMIT 1"),
            {"i": institution_id, "d": args.depth - 1}).one()
        last = connection.execute(text(
            "SELECT xact_id, seq FROM events WHERE institution_id = :i ORDER BY xact_id DESC, seq DESC LIMIT 1"),
            {"i": institution_id}).one()
    print(f"written in {seconds:.0f} s")

    with app.test_request_context(f"/?limit={args.limit}"):
        from flask import request
        fingerprint = parse_event_query(request.args).fingerprint
        deep_cursor = encode_cursor(fingerprint, [institution_id, position.xact_id, position.seq])
        end_cursor = encode_cursor(fingerprint, [institution_id, last.xact_id, last.seq])

    import api.events

    feed_query_times: list[float] = []
    fetch = api.events.fetch_event_page

    def timed_fetch(*fetch_args):
        """The feed's own share of a request: the page query and building its cursor."""
        started = time.perf_counter()
        try:
            return fetch(*fetch_args)
        finally:
            feed_query_times.append(time.perf_counter() - started)

    api.events.fetch_event_page = timed_fetch
    client = app.test_client()
    headers = {"Authorization": f"Bearer {raw_key}"}

    def timed(params) -> tuple[float, dict]:
        started = time.perf_counter()
        response = client.get("/api/v1/events", query_string=params, headers=headers)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, response.get_json()
        return elapsed, response.get_json()

    first_params = {"limit": args.limit}
    deep_params = {"limit": args.limit, "cursor": deep_cursor}
    empty_params = {"limit": args.limit, "cursor": end_cursor}
    assert len(timed(deep_params)[1]["data"]) == args.limit, "the deep page is full"
    assert timed(empty_params)[1]["data"] == [], "the end cursor polls an empty page"
    for _ in range(20):
        timed(first_params), timed(deep_params), timed(empty_params)
    first, deep, empty, baseline, empty_query = [], [], [], [], []
    for _ in range(args.rounds):  # interleaved, so all of them see the same machine load
        first.append(timed(first_params)[0])
        deep.append(timed(deep_params)[0])
        feed_query_times.clear()
        empty.append(timed(empty_params)[0])
        empty_query.extend(feed_query_times)
        started = time.perf_counter()
        client.get("/api/v1/institution", headers=headers)
        baseline.append(time.perf_counter() - started)

    ratio = statistics.median(deep) / statistics.median(first)
    print(f"\nevents feed, {args.events:,} events of one institution, limit={args.limit}, server time:")
    print(f"  first page:               {summary(first)}")
    print(f"  page at depth {args.depth:,}:  {summary(deep)}")
    print(f"  deep / first (p50):       {ratio:.2f}x")
    print(f"  empty poll (at the end):  {summary(empty)}")
    print(f"    of which the feed query: {summary(empty_query)}")
    print(f"  GET /institution (floor): {summary(baseline)}  <- authentication, rate limit, audit row")
    print(f"  load average: {load_average()} on {os.cpu_count()} CPUs")
    from core.events.feed import _OLDEST_RUNNING_TRANSACTION

    statement = ("EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM events WHERE institution_id = :i "
                 f"AND xact_id < {_OLDEST_RUNNING_TRANSACTION.name} "
                 "AND (xact_id, seq) > (:x, :s) ORDER BY xact_id, seq LIMIT :l")
    with engine.connect() as connection:
        for label, (x, s) in (("deep page", position), ("empty poll", last)):
            plan = connection.execute(text(statement), {
                "i": institution_id, "x": x, "s": s, "l": args.limit + 1}).scalars().all()
            steps = [line.strip() for line in plan if "Index Scan" in line or "Execution" in line]
            print(f"  {label} SQL: " + " / ".join(steps))


if __name__ == "__main__":
    main()
