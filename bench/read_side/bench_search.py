"""Search latency: p50/p95 of GET /api/v1/applications/search over realistic queries.

Queries are drawn from the bench database itself (a repeatable sample of applicants): first names, last
names, full names, accent-folded and upper-cased variants, email fragments, and exact application ids.

    python bench/read_side/bench_search.py [--queries 300] [--limit 50]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import unicodedata
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import (  # noqa: E402
    bench_institution_id, database_url, gunicorn, libpq_url, machine_note, new_api_key, summary_ms,
)


def strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def sample_queries(institution_id: str, count: int) -> list[tuple[str, str]]:
    """(kind, q) pairs built from a repeatable sample of the institution's applications."""
    with psycopg.connect(libpq_url(database_url())) as connection:
        rows = connection.execute(
            """
            SELECT a.id, p.first_name, p.last_name, p.email
            FROM applications a TABLESAMPLE SYSTEM (1) REPEATABLE (42)
            JOIN applicants p ON p.id = a.applicant_id
            WHERE a.institution_id = %s
            LIMIT %s
            """,
            (institution_id, count),
        ).fetchall()
    generator = random.Random(42)
    makers = [
        ("last name", lambda app_id, first, last, email: last),
        ("first name", lambda app_id, first, last, email: first),
        ("full name", lambda app_id, first, last, email: f"{first} {last}"),
        ("full name, upper case, no accents",
         lambda app_id, first, last, email: strip_accents(f"{first} {last}").upper()),
        ("email", lambda app_id, first, last, email: email),
        ("email local part prefix", lambda app_id, first, last, email: email.split("@")[0][:8]),
        ("application id", lambda app_id, first, last, email: app_id),
    ]
    queries = []
    for index in range(count):
        application_id, first, last, email = rows[index % len(rows)]
        kind, make = makers[generator.randrange(len(makers))]
        queries.append((kind, make(application_id, first, last, email)))
    return queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--limit", type=int, default=50)
    args = parser.parse_args()

    institution_id = bench_institution_id()
    api_key = new_api_key(institution_id, "read-side bench")
    queries = sample_queries(institution_id, args.queries)
    with gunicorn("wsgi:create_app()", workers=1, threads=4, worker_class="gthread") as server, requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {api_key}"
        url = f"{server.url}/api/v1/applications/search"
        for _, q in queries[:20]:
            session.get(url, params={"q": q, "limit": args.limit}).raise_for_status()
        by_kind: dict[str, list[float]] = {}
        every: list[float] = []
        timed: list[tuple[float, str, str]] = []
        empty = 0
        for kind, q in queries:
            started = time.perf_counter()
            response = session.get(url, params={"q": q, "limit": args.limit})
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            if not response.json()["data"]:
                empty += 1
            every.append(elapsed)
            by_kind.setdefault(kind, []).append(elapsed)
            timed.append((elapsed, kind, q))

    print(machine_note())
    print(f"search, limit={args.limit}, {len(queries)} queries ({empty} without a match): {summary_ms(every)}")
    for kind, samples in sorted(by_kind.items()):
        print(f"  {kind:<36} {summary_ms(samples)}")
    print("slowest:")
    for elapsed, kind, q in sorted(timed, reverse=True)[:5]:
        print(f"  {elapsed * 1000:7.1f} ms  {kind}: {q!r}")


if __name__ == "__main__":
    main()
