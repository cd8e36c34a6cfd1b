"""The load test a user can run (#12): locust, headless, against Karibu and the minimal-Flask baseline.

Starts, in turn for each run (interleaved), the baseline app (bench/harness/baseline_app.py, a body the size
of Karibu's list page) and Karibu on the same gunicorn settings, both on loopback, and drives each with
bench/load/locustfile.py (list, search, by-id, PATCH, trial verification, portal applicant list) for
`--run-time` seconds or `--max-requests` requests, whichever comes first. Prints req/s, p50 and p99 per
endpoint beside the baseline's, and the load average.

    pip install -e '.[bench]'
    DATABASE_URL=postgresql+psycopg://…/karibu_bench python bench/load/run_locust.py --runs 3

With `--alone` (issue #29) there is no baseline: each run measures every endpoint alone (all the users on that
one endpoint), then the mix, on one Karibu server, and prints each endpoint's p99 in the mix over its p99 alone
(goal: at most 3, no failures).

    DATABASE_URL=postgresql+psycopg://…/karibu_bench python bench/load/run_locust.py --alone --runs 3

Karibu's staff session is the seeded admin's (`seed-demo`), or --staff-email/--staff-password.
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import (  # noqa: E402
    TRIAL_KEY, bench_institution_id, gunicorn, load_average, new_api_key, server_env, sign_in, spread,
)

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
# The suffix of the name the locustfile counts a bulkhead's 503 (with Retry-After) under.
REFUSED = " refused (503)"
ENDPOINTS = ("list", "search", "by-id", "patch", "verification", "portal applicants")


def session_cookie(base: str, email: str, password: str) -> str:
    """`name=value` of a signed-in staff session cookie."""
    cookie = next(iter(sign_in(base, email, password).cookies))
    return f"{cookie.name}={cookie.value}"


def warm(base: str, key: str, cookie: str, verification: dict, rounds: int = 5) -> None:
    """Sequential requests to every endpoint first: a worker's first requests load what the app loads lazily,
    which on a busy machine takes seconds and would be measured as the endpoint's latency."""
    api = {"Authorization": f"Bearer {key}"}
    name, _, value = cookie.partition("=")
    for _ in range(rounds):
        page = requests.get(f"{base}/api/v1/applications?limit=50", headers=api, timeout=120).json()["data"]
        requests.get(f"{base}/api/v1/applications/search?q=mar", headers=api, timeout=120)
        requests.get(f"{base}/api/v1/applications/by-id?ids={page[0]['id']}", headers=api, timeout=120)
        requests.patch(f"{base}/api/v1/applications/update", headers=api, timeout=120,
                       json={"updates": [{"id": page[0]["id"], "stage": page[0]["application"]["stage"]}]})
        requests.post(f"{base}/api/v1/verifications", json=verification, timeout=120,
                      headers={"Authorization": f"Bearer {TRIAL_KEY}"})
        requests.get(f"{base}/applicants", cookies={name: value}, timeout=120, allow_redirects=False)


def run_locust(base: str, options, env_extra: dict[str, str]) -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as directory:
        prefix = str(Path(directory) / "stats")
        subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", base,
             "-u", str(options.users), "-r", str(options.users), "--run-time", f"{options.run_time * 3 + 30}s",
             "--csv", prefix, "--only-summary", "--loglevel", "WARNING", "--stop-timeout", "5"],
            env={**os.environ, **env_extra}, check=False, capture_output=True, text=True)
        with open(prefix + "_stats.csv", newline="") as stats:
            rows = {row["Name"]: row for row in csv.DictReader(stats)}
        with open(prefix + "_failures.csv", newline="") as failures:
            reasons = [f"{row['Name']}: {row['Error']} ({row['Occurrences']}×)" for row in csv.DictReader(failures)]
    measured = {name: {"rps": float(row["Requests/s"]), "p50": float(row["50%"]), "p99": float(row["99%"]),
                       "failures": int(row["Failure Count"]), "requests": int(row["Request Count"])}
                for name, row in rows.items()
                if (name in ENDPOINTS or name == "Aggregated") and int(row["Request Count"])}  # else N/A
    measured["Aggregated"]["refusals"] = {name.removesuffix(REFUSED): int(row["Request Count"])
                                          for name, row in rows.items() if name.endswith(REFUSED)}
    if "Aggregated" not in measured:  # locust writes its CSV once a second: a shorter run leaves none
        raise SystemExit("locust recorded no requests: give it a few seconds (--run-time, --max-requests)")
    measured["Aggregated"]["reasons"] = reasons
    return measured


def mix_against_alone(options, settings: dict, key: str, verification: dict, env_extra: dict) -> None:
    """Each run: every endpoint alone, then the mix, on one server started with the shipped configuration
    (`ops.gunicorn_config`, with --workers and --threads); p99 in the mix over p99 alone."""
    alone: dict[str, list[float]] = {name: [] for name in ENDPOINTS}
    mixed: dict[str, list[float]] = {name: [] for name in ENDPOINTS}
    failures = 0
    refusals: dict[str, int] = {}
    for run in range(1, options.runs + 1):
        with gunicorn("wsgi:app", deployed=True, **settings) as server:
            cookie = session_cookie(server.url, options.staff_email, options.staff_password)
            warm(server.url, key, cookie, verification)
            environment = {**env_extra, "KARIBU_LOAD_PORTAL_COOKIE": cookie}
            for name in ENDPOINTS:
                measured = run_locust(server.url, options, {**environment, "KARIBU_LOAD_ONLY": name})
                alone[name].append(measured[name]["p99"])
                failures += measured["Aggregated"]["failures"]
                for refused, count in measured["Aggregated"]["refusals"].items():
                    refusals[f"{refused} alone"] = refusals.get(f"{refused} alone", 0) + count
            measured = run_locust(server.url, options, environment)
            for name in ENDPOINTS:
                mixed[name].append(measured[name]["p99"])
            failures += measured["Aggregated"]["failures"]
            for refused, count in measured["Aggregated"]["refusals"].items():
                refusals[f"{refused} in the mix"] = refusals.get(f"{refused} in the mix", 0) + count
            for reason in measured["Aggregated"]["reasons"]:
                print(f"  failed: {reason}")
        print(f"run {run}: mix {measured['Aggregated']['rps']:.0f} req/s, load {load_average()}", flush=True)
    print("\np99 per endpoint (ms), min / median / max over the runs (locust rounds to 2 significant digits)")
    print(f"{'endpoint':18s} {'alone':>18s} {'in the mix':>18s} {'mix / alone':>18s}")
    for name in ENDPOINTS:
        ratios = [mix / single for mix, single in zip(mixed[name], alone[name])]
        print(f"{name:18s} {spread(alone[name]):>18s} {spread(mixed[name]):>18s} {spread(ratios, 2):>18s}")
    print(f"failures: {failures} (goal: none); goal: every ratio at most 3; load average at the end: {load_average()}")
    for name, count in sorted(refusals.items()):
        print(f"refused by a bulkhead (503 with Retry-After, not timed): {name} {count}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--run-time", type=int, default=20, help="seconds per measurement")
    parser.add_argument("--max-requests", type=int, default=20000, help="per measurement")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (default: as shipped on 2 cores)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--staff-email", default="admin@demo-university.ac.rw")
    parser.add_argument("--staff-password", default="karibu-demo-2026")
    parser.add_argument("--alone", action="store_true",
                        help="each endpoint alone, then the mix: p99 in the mix over p99 alone (no baseline)")
    options = parser.parse_args()
    if importlib.util.find_spec("locust") is None:
        raise SystemExit("locust is not installed: pip install -e '.[bench]'")
    settings = dict(workers=options.workers, threads=options.threads, worker_class="gthread")
    key = new_api_key(bench_institution_id(), "load bench")
    with gunicorn("wsgi:app", **settings) as server:
        base = server.url
        body_bytes = len(requests.get(f"{base}/api/v1/applications?limit=50",
                                      headers={"Authorization": f"Bearer {key}"}, timeout=60).content)
        issuers = requests.get(f"{base}/api/v1/verifications/issuers",
                               headers={"Authorization": f"Bearer {TRIAL_KEY}"}, timeout=60).json()
        verification = next(request for issuer in issuers["data"] for request in issuer.get("demo_requests", []))
    print(f"gunicorn -w {options.workers} --threads {options.threads}, {options.users} locust users, "
          f"{options.run_time} s or {options.max_requests} requests per measurement; baseline body {body_bytes} "
          f"bytes; load {load_average()}")
    env_extra = {"KARIBU_LOAD_API_KEY": key, "KARIBU_LOAD_VERIFICATION": json.dumps(verification),
                 "KARIBU_LOAD_MAX_REQUESTS": str(options.max_requests), "KARIBU_LOAD_SECONDS": str(options.run_time)}
    if options.alone:
        return mix_against_alone(options, settings, key, verification, env_extra)
    results: dict[str, list[dict]] = {"baseline": [], "karibu": []}
    for run in range(1, options.runs + 1):
        with gunicorn("bench.harness.baseline_app:app", env=server_env(BASELINE_BODY_BYTES=str(body_bytes)),
                      **settings) as server:
            results["baseline"].append(run_locust(server.url, options, env_extra))
        with gunicorn("wsgi:app", **settings) as server:
            cookie = session_cookie(server.url, options.staff_email, options.staff_password)
            warm(server.url, key, cookie, verification)
            results["karibu"].append(run_locust(server.url, options,
                                                {**env_extra, "KARIBU_LOAD_PORTAL_COOKIE": cookie}))
        print(f"run {run}: baseline {results['baseline'][-1]['Aggregated']['rps']:.0f} req/s, "
              f"Karibu {results['karibu'][-1]['Aggregated']['rps']:.0f} req/s, load {load_average()}", flush=True)
        for reason in results["karibu"][-1]["Aggregated"]["reasons"]:
            print(f"  failed: {reason}")

    print("\nper endpoint, min / median / max over the runs (locust's p50/p99 are rounded to 2 significant digits)")
    print(f"{'endpoint':18s} {'Karibu req/s':>20s} {'p50 ms':>16s} {'p99 ms':>18s} {'failures':>9s}   "
          f"{'baseline req/s':>20s} {'p50 ms':>14s} {'p99 ms':>14s}")
    for name in (*ENDPOINTS, "Aggregated"):
        karibu = [run[name] for run in results["karibu"] if name in run]
        baseline = [run[name] for run in results["baseline"] if name in run]
        if not karibu or not baseline:
            continue
        print(f"{name:18s} {spread([r['rps'] for r in karibu], 1):>20s} {spread([r['p50'] for r in karibu]):>16s} "
              f"{spread([r['p99'] for r in karibu]):>18s} {sum(r['failures'] for r in karibu):>9d}   "
              f"{spread([r['rps'] for r in baseline], 1):>20s} {spread([r['p50'] for r in baseline]):>14s} "
              f"{spread([r['p99'] for r in baseline]):>14s}")
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
