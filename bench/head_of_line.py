"""Head-of-line blocking: the list endpoint's latency alone, then while other clients run expensive work.

`--list-clients` clients loop on `GET /api/v1/applications?limit=50` for `--seconds`, first alone, then with
`--expensive-clients` more looping over expensive requests: searches of common text, CSV and NDJSON exports
(read to the end), zips of a page of documents and, given STAFF_EMAIL and STAFF_PASSWORD of the bench
institution, portal list pages with their counts. Prints the list's p50/p99 in both phases, their ratio
(goal: p99 with at most 3× p99 alone), and per kind of expensive work how many completed (at once, or after
a 503 of a bulkhead or statement timeout, retried after its Retry-After as a partner would), were still
refused when the phase ended, or failed otherwise (never expected). `--runs` interleaves the
two phases.

    python bench/head_of_line.py                                       # starts gunicorn (shipped settings)
    python bench/head_of_line.py --url http://127.0.0.1:8000 --api-key sk_live_…     # a running service

DATABASE_URL names the bench database (default: the 1M-application `karibu_bench`); the exports are of
`--export-filter` (default a date range, so one export is not the whole million).
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import (  # noqa: E402
    bench_institution_id, gunicorn, machine_note, new_api_key, percentile, sign_in, spread, summary_ms,
)

COMMON_TEXT = ["uwase", "jean", "@example", "mukamana", "grace", "an"]


def expensive_requests(base: str, export_filter: dict) -> list[tuple[str, str, dict, bool]]:
    """(kind, url, params, portal?) cycled through by every expensive client."""
    api = f"{base}/api/v1/applications"
    work = [("search", f"{api}/search", {"q": text, "limit": 50}, False) for text in COMMON_TEXT]
    work += [("csv export", f"{api}/export", {"format": "csv", **export_filter}, False),
             ("ndjson export", f"{api}/export", {"format": "ndjson", **export_filter}, False),
             ("zip", f"{api}/zip", {"limit": 10}, False)]
    if os.environ.get("STAFF_EMAIL"):
        work += [("portal list with count", f"{base}/applicants", {"q": text}, True) for text in COMMON_TEXT[:3]]
    return work


def retrying_idle_connections(session: requests.Session) -> requests.Session:
    """GETs are retried when a kept-alive connection turns out closed (gunicorn closes one idle for its
    keep-alive time, here while a client waits out a Retry-After), as HTTP clients do for idempotent requests."""
    adapter = HTTPAdapter(max_retries=Retry(total=2, connect=2, read=2, status=0, allowed_methods={"GET"},
                                            respect_retry_after_header=False))  # the client loop answers a 503
    session.mount("http://", adapter)
    return session


def client_work(base: str, export_filter: dict, clients: int, search_clients: int,
                export_clients: int) -> list[list[tuple[str, str, dict, bool]]]:
    """The work each expensive client cycles through: `clients` over all of it, then `search_clients` over the
    searches only and `export_clients` over the CSV and NDJSON exports only."""
    work = expensive_requests(base, export_filter)
    searches = [item for item in work if item[0] == "search"]
    exports = [item for item in work if item[0].endswith("export")]
    return [work] * clients + [searches] * search_clients + [exports] * export_clients


def run_phase(base: str, api_key: str, list_clients: int, expensive_work: list[list[tuple[str, str, dict, bool]]],
              seconds: float) -> tuple[list[float], Counter]:
    """List latencies (seconds) and the outcomes of the expensive work (one client per list of work) over one
    phase."""
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    outcomes: Counter = Counter()
    lock = threading.Lock()
    portal = retrying_idle_connections(sign_in(base, os.environ["STAFF_EMAIL"], os.environ["STAFF_PASSWORD"])) \
        if any(on_portal for work in expensive_work for *_, on_portal in work) else None

    def list_client():
        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {api_key}"
            while time.monotonic() < deadline:
                started = time.perf_counter()
                response = session.get(f"{base}/api/v1/applications", params={"limit": 50}, timeout=120)
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    if response.status_code != 200:
                        outcomes[f"list {response.status_code}"] += 1

    def expensive_client(offset: int, own_work: list[tuple[str, str, dict, bool]]):
        """Loops over its work like a well-behaved partner: a 503 is retried after its Retry-After."""
        work = itertools.islice(itertools.cycle(own_work), offset, None)
        with retrying_idle_connections(requests.Session()) as session:
            session.headers["Authorization"] = f"Bearer {api_key}"
            for kind, url, params, on_portal in work:
                client = portal if on_portal else session
                refusals = 0
                while time.monotonic() < deadline:
                    response = client.get(url, params=params, timeout=600, stream=True)
                    for _ in response.iter_content(65536):
                        pass
                    if response.status_code != 503:
                        break
                    refusals += 1
                    time.sleep(min(float(response.headers.get("Retry-After", 1)),
                                   max(0.0, deadline - time.monotonic())))
                else:
                    if refusals:
                        with lock:
                            outcomes[f"{kind}: still refused (503) when the phase ended"] += 1
                    return
                outcome = ("completed" if not refusals else "completed after a 503 and Retry-After") \
                    if response.status_code == 200 else f"failed ({response.status_code})"
                with lock:
                    outcomes[f"{kind}: {outcome}"] += 1
                    outcomes["503s answered (retried after Retry-After)"] += refusals

    threads = [threading.Thread(target=list_client) for _ in range(list_clients)]
    threads += [threading.Thread(target=expensive_client, args=(number, work))
                for number, work in enumerate(expensive_work)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running service (default: start gunicorn with the shipped settings)")
    parser.add_argument("--api-key", help="a live key of the bench institution (default: a new one)")
    parser.add_argument("--list-clients", type=int, default=8)
    parser.add_argument("--expensive-clients", type=int, default=8, help="clients cycling over all the expensive work")
    parser.add_argument("--search-clients", type=int, default=0, help="more clients running searches only")
    parser.add_argument("--export-clients", type=int, default=0, help="more clients running CSV/NDJSON exports only")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--export-filter", default="submitted_after=2026-01-01&submitted_before=2026-01-08",
                        help="query string of the exports' filters")
    args = parser.parse_args()

    export_filter = dict(part.split("=", 1) for part in args.export_filter.split("&") if part)
    api_key = args.api_key or new_api_key(bench_institution_id(), "head-of-line bench")
    server = contextlib.nullcontext(argparse.Namespace(url=args.url)) if args.url else gunicorn(deployed=True)
    alone_p99, mixed_p99, ratios = [], [], []
    with server as running:
        expensive_work = client_work(running.url, export_filter, args.expensive_clients, args.search_clients,
                                     args.export_clients)
        beside = (f"{args.expensive_clients} mixed, {args.search_clients} searching and {args.export_clients}"
                  " exporting clients")
        run_phase(running.url, api_key, args.list_clients, [], 3)  # warm-up
        for run in range(1, args.runs + 1):
            alone, _ = run_phase(running.url, api_key, args.list_clients, [], args.seconds)
            mixed, outcomes = run_phase(running.url, api_key, args.list_clients, expensive_work, args.seconds)
            alone_p99.append(percentile(alone, 0.99) * 1000)
            mixed_p99.append(percentile(mixed, 0.99) * 1000)
            ratios.append(mixed_p99[-1] / alone_p99[-1])
            print(f"run {run}: list alone {summary_ms(alone)} p99={alone_p99[-1]:.1f} ms")
            print(f"       list beside {beside} {summary_ms(mixed)} "
                  f"p99={mixed_p99[-1]:.1f} ms: {ratios[-1]:.2f}× (goal: at most 3×)")
            for outcome, count in sorted(outcomes.items()):
                print(f"       {outcome:<40} {count}")
    print(machine_note())
    print(f"list p99 alone (ms), min / median / max: {spread(alone_p99, 1)}")
    print(f"list p99 with expensive work (ms):        {spread(mixed_p99, 1)}")
    print(f"ratio:                                    {spread(ratios, 2)}")


if __name__ == "__main__":
    main()
