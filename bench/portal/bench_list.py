"""The applicant list at 1M applications on PostgreSQL: first page with its total count, and for each sort a
shallow page against a deep one (keyset cursors), measured over HTTP against gunicorn on loopback.

Usage (a database of its own, seeded once; the counters folded as the worker's sweep keeps them):

    createdb -h 127.0.0.1 karibu_bench_list
    export DATABASE_URL=postgresql://root@127.0.0.1:5432/karibu_bench_list
    flask --app wsgi db upgrade && flask --app wsgi seed-demo --applications 1000000 --json
    flask --app wsgi counts compact
    python bench/portal/bench_list.py [--runs 20] [--rounds 3]

Prints, per round, p50/p95 of: the first page (full page, 50 rows and the count), filter changes answered by
htmx (results and count), and for each of the 8 sorts the "load more" page right after the first page
("shallow") and after row 500,000 ("deep"), with deep/shallow. The deep cursors are signed here with the
server's SECRET_KEY from the row found by OFFSET (slow, once).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))
from bench.harness import BENCH_SECRET_KEY, load_average, percentile  # noqa: E402

# The deep cursors are signed here and checked by the server: both read SECRET_KEY from this environment.
os.environ.setdefault("DATABASE_URL", f"postgresql://{os.environ.get('USER', 'root')}@127.0.0.1:5432/karibu_bench_list")
os.environ.setdefault("SECRET_KEY", BENCH_SECRET_KEY)
os.environ.setdefault("STAFF_EMAIL", "admin@demo-university.ac.rw")
os.environ.setdefault("STAFF_PASSWORD", "karibu-demo-2026")

from bench_pages import portal_server, staff_session, timed  # noqa: E402 (same folder)

SORTS = ("-submitted", "submitted", "-updated", "updated", "name", "-name", "stage", "-stage")
DEEP_ROW = 500_000
FILTERS = (
    ("stage filter (counters)", "/applicants?stage=interview"),
    ("stage + paid + cycle (counters)", None),  # filled with the current cycle's id
    ("submitted dates (exact COUNT)", "/applicants?submitted_after=2026-01-01&submitted_before=2026-02-01"),
    ("search 'uwase' (exact COUNT)", "/applicants?q=uwase"),
)


def deep_cursors() -> tuple[dict[str, tuple[str, str]], str]:
    """For each sort: (cursor after row 50, cursor after row DEEP_ROW), and the current cycle's id."""
    from sqlalchemy import text

    from core.db import db
    from core.applications.listing.cursor import next_cursor
    from core.applications.listing.query import parse_application_query
    from core.applications.overview import current_cycle
    from core.scoping import InstitutionScope
    from portal.applicants.listing import DEFAULT_SORT
    from wsgi import create_app

    app = create_app()
    orders = {
        "submitted": ("a.submitted_at, a.id", "a.submitted_at, a.id"),
        "updated": ("a.updated_at, a.id", "a.updated_at, a.id"),
        "name": ("p.search_text, p.id, a.id", "p.search_text, p.id, a.id"),
    }
    cursors = {}
    with app.app_context():
        institution_id = db.session.execute(text(
            "SELECT institution_id FROM applications GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")).scalar()
        scope = InstitutionScope(institution_id)
        for sort in SORTS:
            key, descending = sort.lstrip("-"), sort.startswith("-")
            direction = " DESC" if descending else ""
            if key == "stage":
                order = (f"s.position{direction}, a.submitted_at DESC, a.id DESC")
                columns = "a.stage, a.submitted_at, a.id"
            else:
                columns = orders[key][1]
                order = ", ".join(part + direction for part in orders[key][0].split(", "))
            query = parse_application_query({"sort": sort}, kind="portal-applicants", default_limit=50,
                                            default_sort=DEFAULT_SORT)
            pair = []
            for offset in (49, DEEP_ROW - 1):
                row = db.session.execute(text(
                    f"SELECT {columns} FROM applications a JOIN applicants p ON p.id = a.applicant_id "
                    f"JOIN stages s ON s.institution_id = a.institution_id AND s.key = a.stage "
                    f"WHERE a.institution_id = :institution ORDER BY {order} OFFSET :offset LIMIT 1"),
                    {"institution": institution_id, "offset": offset}).one()
                pair.append(next_cursor(scope, query.fingerprint, *row))
            cursors[sort] = tuple(pair)
        cycle_id = current_cycle(scope).id
    return cursors, cycle_id


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def p95(samples: list[float]) -> float:
    return percentile(samples, 0.95)


def samples(session, url: str, runs: int, htmx: bool) -> list[float]:
    """Milliseconds of `runs` GETs of `url`, after one to warm up."""
    return timed(session, url, runs, htmx, warm_up=True)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cursors-file", default="/tmp/karibu-bench-list-cursors.json",
                        help="where the signed deep cursors are kept between runs (they depend on SECRET_KEY)")
    options = parser.parse_args()
    saved = Path(options.cursors_file)
    if saved.exists():
        cursors, cycle_id = json.loads(saved.read_text())
    else:
        print("signing deep cursors (OFFSET queries, once)…", flush=True)
        cursors, cycle_id = deep_cursors()
        saved.write_text(json.dumps([cursors, cycle_id]))
    filters = [(label, url or f"/applicants?cycle={cycle_id}&stage=interview&paid=true") for label, url in FILTERS]
    with portal_server(options.workers) as server:
        base = server.url
        session = staff_session(base)
        for round_number in range(1, options.rounds + 1):
            print(f"\nround {round_number}, load average {load_average()}")
            first = samples(session, f"{base}/applicants", options.runs, htmx=False)
            print(f"{'first page + count (full page)':40} p50 {p50(first):7.1f} ms  p95 {p95(first):7.1f} ms")
            for label, path in filters:
                timings = samples(session, base + path, options.runs, htmx=True)
                print(f"{label:40} p50 {p50(timings):7.1f} ms  p95 {p95(timings):7.1f} ms")
            for sort in SORTS:
                shallow, deep = cursors[sort]
                shallow_ms = samples(session, f"{base}/applicants?sort={sort}&cursor={shallow}", options.runs, True)
                deep_ms = samples(session, f"{base}/applicants?sort={sort}&cursor={deep}", options.runs, True)
                print(f"sort {sort:12} shallow p50 {p50(shallow_ms):7.1f} ms  deep (row {DEEP_ROW:,}) p50 "
                      f"{p50(deep_ms):7.1f} ms  deep/shallow {p50(deep_ms) / p50(shallow_ms):.2f}", flush=True)


if __name__ == "__main__":
    main()
