"""Migration 0028 on a large audit log: how long the conversion to monthly partitions (and its downgrade) takes,
and how long writes to audit_log are blocked meanwhile.

Makes a private database (dropped at the end unless --keep), migrates it to 0027_application_reference, writes `--rows`
audit rows spread over the last 12 months with generate_series, then runs `flask db upgrade` and `flask db
downgrade 0027_application_reference` while a writer inserts one audit row every 20 ms on its own connection and times each
insert: the longest insert is the time writes were blocked. Prints one JSON object.

    python bench/partitions/conversion.py [--rows 10000000] [--keep]
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.harness import flask_cli, load_average, server_env, sqlalchemy_url, throwaway_database  # noqa: E402

BEFORE = "0027_application_reference"
SEED_BATCH = 1_000_000
SEED = """
INSERT INTO audit_log (created_at, request_id, institution_id, actor, source, action, target, method, path, query,
                       status, duration_ms, client_ip, user_agent)
SELECT (now() AT TIME ZONE 'UTC') - make_interval(secs => (365 * 86400.0) * n / %(total)s),
       md5(n::text), 'ins_' || (n %% 50), 'key_bench', 'api', 'applications.list', '', 'GET',
       '/api/v1/applications', 'limit=50', 200, 12, '10.0.0.1', 'bench'
FROM generate_series(%(first)s, %(last)s) AS n
"""
WRITE = ("INSERT INTO audit_log (created_at, request_id, actor, source, action, target, method, path, query, status,"
         " duration_ms, client_ip, user_agent) VALUES ((now() AT TIME ZONE 'UTC'), 'w', '', 'api', 'writing', '',"
         " 'GET', '/', '', 200, 1, '', '')")


class Writer(threading.Thread):
    """One audit insert every 20 ms, each timed; errors are counted, never raised."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.durations, self.errors, self.stop = url, [], [], threading.Event()

    def run(self):
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    connection.execute(WRITE, prepare=False)
                    self.durations.append(time.perf_counter() - started)
                except psycopg.Error as error:
                    self.errors.append(str(error).splitlines()[0])
                time.sleep(0.02)


def count(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as connection:
        return connection.execute("SELECT count(*) FROM audit_log").fetchone()[0]


def timed_migration(url: str, env: dict, *args: str) -> dict:
    writer = Writer(url)
    writer.start()
    time.sleep(0.5)
    started = time.perf_counter()
    flask_cli("db", *args, env=env)
    duration = time.perf_counter() - started
    time.sleep(0.5)
    writer.stop.set()
    writer.join()
    return {"seconds": round(duration, 1), "writes_blocked_max_seconds": round(max(writer.durations), 2),
            "writes": len(writer.durations), "write_errors": sorted(set(writer.errors))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--keep", action="store_true")
    options = parser.parse_args()
    import psycopg

    with throwaway_database("karibu_partitions_bench", keep=options.keep) as url:
        env = server_env(sqlalchemy_url(url))
        flask_cli("db", "upgrade", BEFORE, env=env)
        started = time.perf_counter()
        with psycopg.connect(url, autocommit=True) as connection:
            for first in range(1, options.rows + 1, SEED_BATCH):
                last = min(first + SEED_BATCH - 1, options.rows)
                connection.execute(SEED, {"first": first, "last": last, "total": options.rows})
            connection.execute("VACUUM ANALYZE audit_log")
            size = connection.execute("SELECT pg_size_pretty(pg_total_relation_size('audit_log'))").fetchone()[0]
        seeded = time.perf_counter() - started
        before = count(url)
        upgrade = timed_migration(url, env, "upgrade")
        after_upgrade = count(url)
        downgrade = timed_migration(url, env, "downgrade", BEFORE)
        after_downgrade = count(url)
        print(json.dumps({
            "rows": options.rows, "table_size": size, "seed_seconds": round(seeded, 1),
            "upgrade": upgrade, "downgrade": downgrade,
            "rows_kept": before + upgrade["writes"] == after_upgrade
            and after_upgrade + downgrade["writes"] == after_downgrade,
            "load_average": load_average()}, indent=1))


if __name__ == "__main__":
    main()
