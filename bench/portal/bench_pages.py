"""Latency of the main portal pages at scale, measured over HTTP against gunicorn on loopback.

Usage (PostgreSQL database seeded with `flask --app wsgi seed-demo --applications 1000000`):

    DATABASE_URL=postgresql://root@127.0.0.1:5432/karibu_bench_portal \
    STAFF_EMAIL=admin@demo-university.ac.rw STAFF_PASSWORD=karibu-demo-2026 \
    python bench/portal/bench_pages.py [--runs 20] [--workers 2]

Prints one line per page: median and 95th percentile in milliseconds, and the response size.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import gunicorn, percentile, sign_in  # noqa: E402


def portal_server(workers: int, **options):
    """Karibu under gunicorn on loopback, ready once the sign-in page answers (up to 3 minutes: the shared
    machine can be slow to start it)."""
    return gunicorn("wsgi:app", workers=workers, probe="/login", start_seconds=180, **options)


def staff_session(base: str) -> requests.Session:
    """Signed in as STAFF_EMAIL with STAFF_PASSWORD."""
    return sign_in(base, os.environ["STAFF_EMAIL"], os.environ["STAFF_PASSWORD"])


def timed(session: requests.Session, url: str, runs: int, htmx: bool,
          warm_up: bool = False) -> tuple[list[float], int]:
    """Milliseconds of `runs` GETs of `url` (after one more if `warm_up`), and the size of the last answer."""
    headers = {"HX-Request": "true"} if htmx else {}
    if warm_up:
        session.get(url, headers=headers)
    samples = []
    size = 0
    for _ in range(runs):
        started = time.perf_counter()
        response = session.get(url, headers=headers)
        samples.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{url}: HTTP {response.status_code}")
        size = len(response.content)
    return samples, size


def measure(session: requests.Session, url: str, runs: int, htmx: bool) -> tuple[float, float, int]:
    samples, size = timed(session, url, runs, htmx)
    return statistics.median(samples), percentile(samples, 0.95), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    with portal_server(options.workers) as server:
        base = server.url
        session = staff_session(base)
        first = session.get(f"{base}/applicants").text
        cursor_url = re.search(r'hx-get="(/applicants\?cursor=[^"]+)"', first).group(1).replace("&amp;", "&")
        # The file's link carries the list's view (`?back=…`).
        application_id = re.search(r'href="/applicants/(app_[A-Za-z0-9]+)[?"]', first).group(1)
        pages = [
            ("dashboard (current cycle)", "/dashboard", False),
            ("applicants, first page", "/applicants", False),
            ("applicants, load more (htmx rows)", cursor_url, True),
            ("applicants, stage+paid filter (htmx)", "/applicants?stage=interview&paid=true", True),
            ("applicants, search by name (htmx)", "/applicants?q=uwase", True),
            ("applicant file", f"/applicants/{application_id}", False),
            ("cycles with counts", "/cycles", False),
            ("audit log", "/audit", False),
        ]
        print(f"{'page':40} {'median ms':>10} {'p95 ms':>10} {'bytes':>9}")
        for label, path, htmx in pages:
            median, p95, size = measure(session, base + path, options.runs, htmx)
            print(f"{label:40} {median:10.1f} {p95:10.1f} {size:9d}", flush=True)


if __name__ == "__main__":
    main()
