"""Search worst case: p50/p99 of 100 searches drawn like real ones, against a list page, one client.

The queries come from the bench database: common and rare first and last names, partial emails, application
ids, one- and two-letter texts and text that matches nothing (`--show-queries` prints them). Each search is
followed by a list page (`GET /api/v1/applications?limit=50`), so both sides meet the same load. A 503 (a full
bulkhead, or a search cut by its statement timeout) is counted, not timed.

    python bench/search_worst_case.py                                  # starts gunicorn (shipped settings)
    python bench/search_worst_case.py --url http://127.0.0.1:8000 --api-key sk_live_…   # a running service

DATABASE_URL names the database the queries are drawn from (default: the 1M-application `karibu_bench`).
"""
from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import (  # noqa: E402
    bench_institution_id, database_url, gunicorn, libpq_url, machine_note, new_api_key, percentile, summary_ms,
)

# Rounds of the warm-up: enough for each of gunicorn's workers and threads to take every shape at least once.
WARM_UP_ROUNDS = 8
NO_MATCH = ["qqxz", "zzyzx", "nobody@nowhere.example", "xq", "kwzq vbnm", "@example.invalid", "0000000",
            "jjjjjj", "q", "w@w", "app_doesnotexist", "Ÿvq"]


def draw_queries(institution_id: str, seed: int) -> list[tuple[str, str]]:
    """(kind, q): 100 queries, the same ones for the same database and seed."""
    chosen = random.Random(seed)
    with psycopg.connect(libpq_url(database_url())) as connection:
        def names(column: str, order: str) -> list[str]:
            return [row[0] for row in connection.execute(
                f"SELECT {column} FROM applicants WHERE institution_id = %s GROUP BY {column} "
                f"ORDER BY count(*) {order}, {column} LIMIT 40", (institution_id,))]
        common_first, rare_first = names("first_name", "DESC"), names("first_name", "ASC")
        common_last, rare_last = names("last_name", "DESC"), names("last_name", "ASC")
        sample = connection.execute(
            "SELECT a.id, p.email FROM applications a TABLESAMPLE SYSTEM (1) REPEATABLE (7) "
            "JOIN applicants p ON p.id = a.applicant_id WHERE a.institution_id = %s LIMIT 200",
            (institution_id,)).fetchall()
    if not sample:
        raise SystemExit("the database holds no applications of that institution")
    emails = [email for _, email in sample]
    letters = "abcdeghijklmnoprstuwyz"
    queries = [("common first name", name) for name in chosen.sample(common_first, min(12, len(common_first)))]
    queries += [("common last name", name) for name in chosen.sample(common_last, min(12, len(common_last)))]
    queries += [("rare first name", name) for name in chosen.sample(rare_first, min(12, len(rare_first)))]
    queries += [("rare last name", name) for name in chosen.sample(rare_last, min(12, len(rare_last)))]
    for email in chosen.sample(emails, min(16, len(emails))):
        local, _, domain = email.partition("@")
        queries.append(("partial email", chosen.choice([local[:chosen.randint(4, 8)], "@" + domain[:6], email])))
    queries += [("application id", application_id) for application_id, _ in chosen.sample(sample, min(12, len(sample)))]
    queries += [("one or two letters", "".join(chosen.choice(letters) for _ in range(chosen.randint(1, 2))))
                for _ in range(12)]
    queries += [("no match", text) for text in NO_MATCH]
    return queries[:100]


def timed_get(session: requests.Session, url: str, params: dict) -> tuple[float, int]:
    started = time.perf_counter()
    response = session.get(url, params=params, timeout=120)
    elapsed = time.perf_counter() - started
    if response.status_code >= 500 and response.status_code != 503:
        raise SystemExit(f"{url} {params}: HTTP {response.status_code}")
    return elapsed, response.status_code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running service (default: start gunicorn with the shipped settings)")
    parser.add_argument("--api-key", help="a live key of the bench institution (default: a new one)")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--show-queries", action="store_true")
    args = parser.parse_args()

    institution_id = bench_institution_id()
    queries = draw_queries(institution_id, args.seed)
    if args.show_queries:
        for kind, q in queries:
            print(f"{kind:<20} {q!r}")
    api_key = args.api_key or new_api_key(institution_id, "search worst case bench")
    server = contextlib.nullcontext(argparse.Namespace(url=args.url)) if args.url else gunicorn(deployed=True)
    with server as running, requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {api_key}"
        search_url, list_url = f"{running.url}/api/v1/applications/search", f"{running.url}/api/v1/applications"
        # Warm-up: each kind's first query a few times, so that every worker has built each statement shape
        # (a text, a short text, an id, a text matched by its pairs) before anything is timed.
        first_of_kind = list({kind: q for kind, q in reversed(queries)}.values())
        for q in first_of_kind * WARM_UP_ROUNDS:
            timed_get(session, search_url, {"q": q, "limit": args.limit})
            timed_get(session, list_url, {"limit": args.limit})
        searches, pages, by_kind, slowest, refused = [], [], {}, [], 0
        for kind, q in queries:
            elapsed, status = timed_get(session, search_url, {"q": q, "limit": args.limit})
            if status == 503:
                refused += 1
            else:
                searches.append(elapsed)
                by_kind.setdefault(kind, []).append(elapsed)
                slowest.append((elapsed, kind, q))
            pages.append(timed_get(session, list_url, {"limit": args.limit})[0])

    print(machine_note())
    print(f"searches  {summary_ms(searches)} p99={percentile(searches, 0.99) * 1000:.1f} ms ({refused} answered 503)")
    print(f"list page {summary_ms(pages)} p99={percentile(pages, 0.99) * 1000:.1f} ms")
    print(f"search p99 / list p99: {percentile(searches, 0.99) / percentile(pages, 0.99):.2f} (goal: at most 3)")
    for kind, samples in sorted(by_kind.items()):
        print(f"  {kind:<20} {summary_ms(samples)}")
    print("slowest:")
    for elapsed, kind, q in sorted(slowest, reverse=True)[:5]:
        print(f"  {elapsed * 1000:8.1f} ms  {kind}: {q!r}")


if __name__ == "__main__":
    main()
