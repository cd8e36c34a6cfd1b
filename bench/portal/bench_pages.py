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
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import requests

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, workers: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SECRET_KEY=os.environ.get("SECRET_KEY", "portal-bench-secret-of-at-least-32-characters"),
               PORTAL_LOGIN_RATE_LIMIT="1000/minute", PORTAL_LOGIN_ADDRESS_RATE_LIMIT="1000/minute")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
         "--log-level", "warning", "wsgi:app"], cwd=PROJECT_ROOT, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(f"http://127.0.0.1:{port}/login", timeout=10)
            return server
        except requests.RequestException:
            time.sleep(0.2)
    server.terminate()
    raise SystemExit("gunicorn did not start")


def sign_in(base: str) -> requests.Session:
    session = requests.Session()
    token = CSRF_META.search(session.get(f"{base}/login").text).group(1)
    response = session.post(f"{base}/login", data={"email": os.environ["STAFF_EMAIL"],
                                                  "password": os.environ["STAFF_PASSWORD"], "csrf_token": token},
                            allow_redirects=False)
    if response.status_code != 302:
        raise SystemExit(f"sign-in failed: {response.status_code}")
    return session


def measure(session: requests.Session, url: str, runs: int, htmx: bool) -> tuple[float, float, int]:
    headers = {"HX-Request": "true"} if htmx else {}
    timings = []
    size = 0
    for _ in range(runs):
        started = time.perf_counter()
        response = session.get(url, headers=headers)
        timings.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{url}: HTTP {response.status_code}")
        size = len(response.content)
    timings.sort()
    return statistics.median(timings), timings[max(0, int(len(timings) * 0.95) - 1)], size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    port = free_port()
    server = start_server(port, options.workers)
    base = f"http://127.0.0.1:{port}"
    try:
        session = sign_in(base)
        first = session.get(f"{base}/applicants").text
        cursor_url = re.search(r'hx-get="(/applicants\?cursor=[^"]+)"', first).group(1).replace("&amp;", "&")
        application_id = re.search(r'href="/applicants/(app_[A-Za-z0-9]+)"', first).group(1)
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
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
