"""What request metrics and /metrics scraping cost: p50 of `GET /api/v1/applications` under load, with
metrics (METRICS_ENABLED=true, /metrics scraped every second) and without (METRICS_ENABLED=false).

Both servers (gunicorn as deployed, ops/gunicorn_config.py, with 2 workers) run against the same private
PostgreSQL database; rounds alternate with, without, with, … so a change of machine load hits both.

    .venv/bin/python bench/production/metrics_overhead.py [--rounds 4] [--seconds 10] [--clients 4]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import (  # noqa: E402
    PROJECT_ROOT, flask_json, gunicorn, machine_note, migrated_database, percentile, server_env,
)

SECRET_KEY = "production-bench-secret-key-0123456789abcdef"
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/8")


def environment(database: str, **settings: str) -> dict[str, str]:
    """The bench's server environment on the private database, its own secret key and Redis database."""
    return server_env(database, SECRET_KEY=SECRET_KEY, REDIS_URL=REDIS_URL, **settings)


def served(database: str, **settings: str):
    """Karibu under gunicorn as deployed (ops/gunicorn_config.py), 2 workers, on the private database."""
    return gunicorn("wsgi:app", env=environment(database, **settings), workers=2, deployed=True)


def seed(database: str, applications: int) -> dict:
    return flask_json("seed-demo", "--applications", str(applications), env=environment(database))


def load_round(base: str, key: str, seconds: float, clients: int, scrape: bool) -> list[float]:
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client():
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {key}"
        mine = []
        while time.monotonic() < stop:
            started = time.perf_counter()
            response = session.get(base + "/api/v1/applications?limit=50")
            mine.append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
        with lock:
            latencies.extend(mine)

    def scraper():
        while time.monotonic() < stop:
            assert requests.get(base + "/metrics", timeout=10).status_code == 200
            time.sleep(1)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    if scrape:
        threads.append(threading.Thread(target=scraper))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


OBSERVATION_CODE = """
import os, tempfile, timeit
os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp()
from core.metrics import HTTP_LATENCY, HTTP_REQUESTS
def observe():
    HTTP_REQUESTS.labels("api.list_applications", "GET", "200").inc()
    HTTP_LATENCY.labels("api.list_applications", "GET").observe(0.012)
runs = timeit.repeat(observe, number=20000, repeat=7)
print(min(runs) / 20000 * 1e6)
"""


def hook_cost_microseconds() -> float:
    """What the request metrics add to one request, free of the machine's noise: the exact observation made
    per request (a counter and a histogram, in multiprocess mode as under gunicorn), best of 7 x 20,000."""
    import subprocess

    output = subprocess.run([sys.executable, "-c", OBSERVATION_CODE], cwd=PROJECT_ROOT, capture_output=True,
                            text=True, check=True, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}).stdout
    return float(output.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10, help="rounds per variant (interleaved)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--applications", type=int, default=5000)
    args = parser.parse_args()
    with migrated_database("karibu_bench_production", SECRET_KEY=SECRET_KEY, REDIS_URL=REDIS_URL) as url:
        key = seed(url, args.applications)["api_key"]
        with served(url, METRICS_ENABLED="true") as with_server, \
                served(url, METRICS_ENABLED="false") as without_server:
            with_metrics, without_metrics = with_server.url, without_server.url
            for base in (with_metrics, without_metrics):  # warm both (connections, caches)
                load_round(base, key, 3, args.clients, scrape=False)
            p50s = {"with": [], "without": []}
            for round_number in range(args.rounds):
                for name, base in (("with", with_metrics), ("without", without_metrics)):
                    latencies = load_round(base, key, args.seconds, args.clients, scrape=name == "with")
                    p50s[name].append(percentile(latencies, 0.5) * 1000)
                    print(f"round {round_number + 1} {name:>7} metrics: n={len(latencies)} "
                          f"p50={p50s[name][-1]:.2f} ms p95={percentile(latencies, 0.95) * 1000:.2f} ms",
                          flush=True)
    with_p50, without_p50 = statistics.median(p50s["with"]), statistics.median(p50s["without"])
    pair_ratios = [w / wo for w, wo in zip(p50s["with"], p50s["without"])]
    print(f"\nmedian p50 with metrics {with_p50:.2f} ms, without {without_p50:.2f} ms: "
          f"overhead {100 * (with_p50 / without_p50 - 1):+.1f}% (target <= 3%); "
          f"median of the per-round ratios {100 * (statistics.median(pair_ratios) - 1):+.1f}%")
    per_request = hook_cost_microseconds()
    print(f"in-process cost of the request metrics: {per_request:.1f} µs per request "
          f"= {100 * per_request / 1000 / without_p50:.2f}% of the p50 without metrics")
    print(machine_note())


if __name__ == "__main__":
    main()
