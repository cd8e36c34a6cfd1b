"""The growing tables at scale (#43): the API list's p50/p99 and the audit insert cost with `--large` audit rows
against `--small`, and one month's retention of the large audit log while writes go on.

Clones the bench database (DATABASE_URL, default the 1M-application `karibu_bench`, migrated to 0028) twice with
CREATE DATABASE … TEMPLATE and writes `--small` and `--large` audit rows into them, spread over the months of the
audit retention period (RETENTION_AUDIT_DAYS, each month in its own partition), then VACUUM ANALYZE. Then
`--rounds` rounds, small and large interleaved: gunicorn with the shipped settings on each clone, 8 client
threads on `GET /api/v1/applications?limit=50` for `--seconds` (each request writes one committed audit row),
then `--inserts` single-row audit INSERTs (the rows the API writes) committed one by one on one connection. Then
on the large clone the oldest month is made expired (a retention period that ends in the first day of the next
month) and `flask retention run` is timed while a writer inserts an audit row every 20 ms: its duration, the
partitions dropped, the longest insert (goal: under a second; target 100 ms). One JSON object per round, then a
summary (goal: large within 10% of small). The clones are dropped at the end unless --keep.

    python bench/partitions/scale.py [--small 1000000] [--large 50000000] [--rounds 3] [--seconds 30] [--keep]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    bench_institution_id, database_url, flask_json, gunicorn, libpq_url, load_average, machine_note, new_api_key,
    percentile, server_env, spread, sqlalchemy_url,
)
from bench.partitions.conversion import Writer  # noqa: E402

RETENTION_AUDIT_DAYS = 400  # core/config.py's default
SEED_BATCH = 1_000_000
CLIENTS = 8
LIST = "/api/v1/applications"
SEED = """
INSERT INTO audit_log (created_at, request_id, institution_id, actor, source, action, target, method, path, query,
                       status, duration_ms, client_ip, user_agent)
SELECT %(start)s + make_interval(secs => %(span)s * n / %(total)s),
       md5(n::text), 'ins_' || (n %% 50), 'key_bench', 'api', 'applications.list', '', 'GET',
       '/api/v1/applications', 'limit=50', 200, 12, '10.0.0.1', 'bench'
FROM generate_series(%(first)s, %(last)s) AS n
"""
AUDIT_INSERT = """
INSERT INTO audit_log (created_at, request_id, institution_id, actor, source, action, target, method, path, query,
                       status, duration_ms, client_ip, user_agent)
VALUES ((now() AT TIME ZONE 'UTC'), %(request)s, %(institution)s, 'key_bench', 'api', 'applications.list', '',
        'GET', '/api/v1/applications', 'limit=50', 200, 12, '127.0.0.1', 'python-requests')
"""


def utcnow() -> datetime:
    """Now in UTC without a zone, as the audit log stores its times."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def month_start(moment: datetime, months_later: int = 0) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months_later
    return datetime(index // 12, index % 12 + 1, 1)


@contextmanager
def clones(source: str, keep: bool):
    """Two copies of the database `source` (a libpq URL): (small, large) libpq URLs; dropped on exit unless `keep`."""
    import psycopg

    server, name = source.rsplit("/", 1)
    suffix = uuid.uuid4().hex[:6]
    names = [f"{name}_scale_{size}_{suffix}" for size in ("small", "large")]
    admin = f"{server}/postgres"
    made = []
    try:
        with psycopg.connect(admin, autocommit=True) as connection:
            for clone in names:
                connection.execute(f'CREATE DATABASE "{clone}" TEMPLATE "{name}"')
                made.append(clone)
        yield tuple(f"{server}/{clone}" for clone in names)
    finally:
        if keep:
            print(f"kept databases {', '.join(made)}", file=sys.stderr)
        else:
            with psycopg.connect(admin, autocommit=True) as connection:
                for clone in made:
                    connection.execute(f'DROP DATABASE IF EXISTS "{clone}" WITH (FORCE)')


def make_month_partitions(connection, first: datetime, last: datetime) -> None:
    """A partition of audit_log for every month from `first` to `last` that has none (any row of it the DEFAULT
    partition holds moved in), as the daily job does."""
    month = first
    while month <= last:
        name = f"audit_log_p{month:%Y_%m}"
        if connection.execute("SELECT to_regclass(%s) IS NULL", (name,)).fetchone()[0]:
            bounds = {"start": month, "end": month_start(month, 1)}
            with connection.transaction():
                connection.execute("CREATE TEMPORARY TABLE moving (LIKE audit_log) ON COMMIT DROP")
                connection.execute("WITH moved AS (DELETE FROM audit_log_default WHERE created_at >= %(start)s"
                                   " AND created_at < %(end)s RETURNING *) INSERT INTO moving SELECT * FROM moved",
                                   bounds)
                connection.execute(f"CREATE TABLE {name} PARTITION OF audit_log FOR VALUES FROM"
                                   f" ('{month.isoformat()}') TO ('{bounds['end'].isoformat()}')")
                connection.execute("INSERT INTO audit_log SELECT * FROM moving")
        month = month_start(month, 1)


def seed(url: str, rows: int, label: str) -> dict:
    """`rows` audit rows spread evenly from the first month of the audit retention period to now, in batches (a
    progress line on stderr after each), then VACUUM ANALYZE; the table's rows and size."""
    import psycopg

    now = utcnow()
    start = month_start(now - timedelta(days=RETENTION_AUDIT_DAYS))
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as connection:
        if not connection.execute("SELECT count(*) FROM pg_partitioned_table"
                                  " WHERE partrelid = 'audit_log'::regclass").fetchone()[0]:
            raise SystemExit("audit_log is not partitioned in the bench database: run `flask db upgrade` on it")
        make_month_partitions(connection, start, now)
        for first in range(1, rows + 1, SEED_BATCH):
            last = min(first + SEED_BATCH - 1, rows)
            connection.execute(SEED, {"start": start, "span": (now - start).total_seconds(), "total": rows,
                                      "first": first, "last": last})
            print(f"{label}: {last:,} / {rows:,} audit rows ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr, flush=True)
        connection.execute("VACUUM ANALYZE audit_log")
        total, size = connection.execute(
            "SELECT sum(class.reltuples)::bigint, pg_size_pretty(sum(pg_total_relation_size(tree.relid)))"
            " FROM pg_partition_tree('audit_log') AS tree JOIN pg_class AS class ON class.oid = tree.relid"
            " WHERE tree.isleaf").fetchone()
    return {"audit_rows": total, "audit_size": size, "seed_seconds": round(time.perf_counter() - started, 1),
            "first_month": f"{start:%Y-%m}"}


def list_latencies(base: str, api_key: str, seconds: float) -> dict:
    """CLIENTS threads looping on the list for `seconds` after a warm-up: p50 / p99 in ms, requests, errors."""
    durations, errors = [], []
    lock = threading.Lock()

    def client(until: float, record: bool) -> None:
        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {api_key}"
            while time.perf_counter() < until:
                started = time.perf_counter()
                try:
                    response = session.get(base + LIST, params={"limit": 50}, timeout=60)
                    ok = response.status_code == 200
                except requests.RequestException as error:
                    ok, response = False, error
                took = time.perf_counter() - started
                if record:
                    with lock:
                        (durations.append(took) if ok else errors.append(str(getattr(response, "status_code",
                                                                                        response))))

    for record, length in ((False, min(5.0, seconds / 3)), (True, seconds)):
        until = time.perf_counter() + length
        threads = [threading.Thread(target=client, args=(until, record)) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return {"p50_ms": round(statistics.median(durations) * 1000, 1),
            "p99_ms": round(percentile(durations, 0.99) * 1000, 1), "requests": len(durations),
            "errors": sorted(set(errors))}


def insert_cost(url: str, institution: str, inserts: int) -> dict:
    """`inserts` audit rows of the API's shape, each INSERT committed by itself on one connection: p50 / p99 µs."""
    import psycopg

    durations = []
    with psycopg.connect(url) as connection:
        for _ in range(inserts):
            started = time.perf_counter()
            connection.execute(AUDIT_INSERT, {"request": uuid.uuid4().hex, "institution": institution})
            connection.commit()
            durations.append(time.perf_counter() - started)
    return {"p50_us": round(statistics.median(durations) * 1e6), "p99_us": round(percentile(durations, 0.99) * 1e6),
            "inserts": inserts}


def measure(url: str, api_key: str, institution: str, options) -> dict:
    """The list's latencies through gunicorn (shipped settings) on `url`, then the audit insert cost there."""
    env = server_env(sqlalchemy_url(url))
    with gunicorn(deployed=True, env=env) as server:
        api = list_latencies(server.url, api_key, options.seconds)
    return {"list": api, "audit_insert": insert_cost(url, institution, options.inserts)}


def one_month_of_retention(url: str) -> dict:
    """The oldest month made expired (RETENTION_AUDIT_DAYS ending in the next month's first day), then `flask
    retention run` timed with an audit insert every 20 ms meanwhile."""
    now = utcnow()
    oldest = month_start(now - timedelta(days=RETENTION_AUDIT_DAYS))
    keep_days = (now - month_start(oldest, 1)).days
    env = server_env(sqlalchemy_url(url), RETENTION_AUDIT_DAYS=str(keep_days))
    writer = Writer(url)
    writer.start()
    time.sleep(0.5)
    started = time.perf_counter()
    report = flask_json("retention", "run", env=env)
    duration = time.perf_counter() - started
    time.sleep(0.5)
    writer.stop.set()
    writer.join()
    audit = next(kind for kind in report["kinds"] if kind["kind"] == "audit_log")
    return {"oldest_month": f"{oldest:%Y-%m}", "retention_days": keep_days, "seconds": round(duration, 2),
            "partitions_dropped": audit["partitions_dropped"], "audit_rows_deleted": audit["deleted"],
            "writes_blocked_max_ms": round(max(writer.durations) * 1000, 1), "writes": len(writer.durations),
            "write_errors": sorted(set(writer.errors))}


def summary(rounds: list[dict]) -> dict:
    """Per figure: min / median / max over the rounds on each database, and the ratio of the medians."""
    figures = {"list_p50_ms": ("list", "p50_ms", 1), "list_p99_ms": ("list", "p99_ms", 1),
               "insert_p50_us": ("audit_insert", "p50_us", 0), "insert_p99_us": ("audit_insert", "p99_us", 0)}
    result = {}
    for name, (part, key, digits) in figures.items():
        values = {size: [measured[size][part][key] for measured in rounds] for size in ("small", "large")}
        ratio = statistics.median(values["large"]) / statistics.median(values["small"])
        result[name] = {"small": spread(values["small"], digits), "large": spread(values["large"], digits),
                        "ratio_large_small": round(ratio, 2), "within_10_percent": ratio <= 1.10}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000_000, help="audit rows in the small clone")
    parser.add_argument("--large", type=int, default=50_000_000, help="audit rows in the large clone")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30, help="of list requests per database and round")
    parser.add_argument("--inserts", type=int, default=2000, help="timed audit inserts per database and round")
    parser.add_argument("--keep", action="store_true", help="keep the two clones")
    options = parser.parse_args()

    source = libpq_url(database_url())
    institution = bench_institution_id(source)
    with clones(source, options.keep) as (small, large):
        databases = {"small": small, "large": large}
        seeded = {size: seed(url, getattr(options, size), size) for size, url in databases.items()}
        keys = {size: new_api_key(institution, "scale bench", env=server_env(sqlalchemy_url(url)))
                for size, url in databases.items()}
        print(json.dumps({"seeded": seeded}), flush=True)
        rounds = []
        for number in range(1, options.rounds + 1):
            order = ("small", "large") if number % 2 else ("large", "small")  # neither always goes first
            measured = {size: measure(databases[size], keys[size], institution, options) for size in order}
            rounds.append(measured)
            print(json.dumps({"round": number, **measured, "load_average": load_average()}), flush=True)
        retention = one_month_of_retention(large)
        print(json.dumps({"retention_of_one_month_large": retention}), flush=True)
        print(json.dumps({"summary": summary(rounds), "retention": retention, "seeded": seeded,
                          "clients": CLIENTS, "seconds": options.seconds, "rounds": options.rounds,
                          "machine": machine_note()}, indent=1))


if __name__ == "__main__":
    main()
