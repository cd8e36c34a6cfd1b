"""Keyset pagination cost: the page at depth ~900,000 against the first page, `limit=100`.

The deep cursor is minted with the server's own cursor code and SECRET_KEY for the row at the requested
depth (walking 9,000 pages first would only add noise); the server then treats it like any cursor.
Requests alternate between the two pages so that both see the same machine load.

    python bench/read_side/bench_pages.py [--depth 900000] [--limit 100] [--rounds 60]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import (  # noqa: E402
    bench_institution_id, database_url, gunicorn, libpq_url, machine_note, new_api_key, server_env, summary_ms,
)


def row_at_depth(institution_id: str, depth: int):
    with psycopg.connect(libpq_url(database_url())) as connection:
        row = connection.execute(
            "SELECT submitted_at, id FROM applications WHERE institution_id = %s "
            "ORDER BY submitted_at, id OFFSET %s LIMIT 1",
            (institution_id, depth - 1),
        ).fetchone()
    if row is None:
        raise SystemExit(f"the institution has fewer than {depth} applications")
    return row


def mint_cursor(institution_id: str, limit: int, submitted_at, application_id: str) -> str:
    """The cursor the server would hand out after the row at that position, for `?limit=<limit>`."""
    os.environ.update(server_env())
    from core.applications.listing.cursor import encode_cursor, query_fingerprint
    from wsgi import create_app

    with create_app().app_context():
        return encode_cursor(query_fingerprint("applications", limit, {}),
                             [institution_id, submitted_at.isoformat(), application_id])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, default=900_000)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()

    institution_id = bench_institution_id()
    api_key = new_api_key(institution_id, "read-side bench")
    submitted_at, application_id = row_at_depth(institution_id, args.depth)
    deep_cursor = mint_cursor(institution_id, args.limit, submitted_at, application_id)

    with gunicorn("wsgi:create_app()", workers=1, threads=4, worker_class="gthread") as server, requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {api_key}"
        url = f"{server.url}/api/v1/applications"
        first_params = {"limit": args.limit}
        deep_params = {"limit": args.limit, "cursor": deep_cursor}
        deep_page = session.get(url, params=deep_params)
        deep_page.raise_for_status()
        deep_ids = [record["id"] for record in deep_page.json()["data"]]
        if len(deep_ids) != args.limit:
            raise SystemExit(f"the deep page holds {len(deep_ids)} records, expected {args.limit}")
        for _ in range(10):
            session.get(url, params=first_params).raise_for_status()
            session.get(url, params=deep_params).raise_for_status()
        first_times: list[float] = []
        deep_times: list[float] = []
        for _ in range(args.rounds):
            for params, samples in ((first_params, first_times), (deep_params, deep_times)):
                started = time.perf_counter()
                response = session.get(url, params=params)
                samples.append(time.perf_counter() - started)
                response.raise_for_status()

    ratio = statistics.median(deep_times) / statistics.median(first_times)
    print(machine_note())
    print(f"first page,  limit={args.limit}: {summary_ms(first_times)}")
    print(f"page at depth {args.depth:,}, limit={args.limit}: {summary_ms(deep_times)}")
    print(f"depth/first median time ratio: {ratio:.2f} (target <= 1.2)")


if __name__ == "__main__":
    main()
