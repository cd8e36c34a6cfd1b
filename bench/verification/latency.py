"""Verification latency through the service vs calling the registry simulator directly.

Starts, on loopback only, the registry simulator and the Karibu app under gunicorn as deployed
(`ops.gunicorn_config`: threaded workers with keep-alive; `--workers` of them), migrates a throwaway
database, creates an institution and a live key, then for each simulated registry latency sends the same
simulated records (every registry and level) alternately:

- direct:  the registry adapter calling the simulator (HTTP + parsing of the registry's wire format);
- service: `POST /api/v1/verifications` with the live key (auth, validation, registry call, ledger row, audit);
- baseline: `GET /api/v1/verifications/issuers` with the same key (auth, rate limit, audit: the cost every
  API request pays), to split the overhead between the shared request pipeline and verification itself.

Prints p50/p95 of each, the baseline p50 and the p50 ratio service/direct (target <= 1.2). Bounded: --requests per latency, then it stops.

    python bench/verification/latency.py [--requests 200] [--latencies 0,0.05,0.15] [--database-url URL]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    flask_cli, flask_json, free_port, gunicorn, new_api_key, percentile, server_env, stop, wait_until_serving,
)
from core.verification.adapters import ADAPTERS, RegistryEndpoint  # noqa: E402
from devtools.simulated_records import SIMULATED_RECORDS  # noqa: E402

TOKENS = {"NESA": "bench-nesa-token", "UNEB": "bench-uneb-token", "KNEC": "bench-knec-token"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="requests per path and latency")
    parser.add_argument("--latencies", default="0,0.05,0.15", help="simulated registry latencies, seconds")
    parser.add_argument("--database-url", default="", help="default: a throwaway SQLite file")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    options = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="karibu-bench-"))
    simulator_port = free_port()
    simulator_url = f"http://127.0.0.1:{simulator_port}"
    registries = {}
    for code, token in TOKENS.items():
        registries[f"REGISTRY_{code}_URL"] = f"{simulator_url}/{code.lower()}"
        registries[f"REGISTRY_{code}_TOKEN"] = token
    env = server_env(options.database_url or f"sqlite:///{workdir / 'bench.db'}",
                     REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/5"),
                     DOCUMENT_STORAGE_DIR=str(workdir / "documents"), REGISTRY_READ_TIMEOUT="10", **registries)

    flask_cli("db", "upgrade", env=env)
    institution_id = flask_json("institutions", "create", "Bench University", env=env)["institution_id"]
    api_key = new_api_key(institution_id, env=env)

    simulator = subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "registry-simulator", "--port",
                                  str(simulator_port), "--quiet"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                 start_new_session=True)
    try:
        wait_until_serving(f"{simulator_url}/_simulator/health", "the registry simulator", process=simulator)
        with gunicorn("wsgi:app", env=env, workers=options.workers, deployed=True,
                      probe="/api/v1/openapi.json") as app:
            run(options, simulator_url, app.url, api_key)
    finally:
        stop(simulator)
        shutil.rmtree(workdir, ignore_errors=True)


def run(options, simulator_url: str, app_url: str, api_key: str) -> None:
    adapters = {code: ADAPTERS[code](RegistryEndpoint(f"{simulator_url}/{code.lower()}", TOKENS[code], 3, 10))
                for code in TOKENS}
    service = requests.Session()
    service.headers.update({"Authorization": f"Bearer {api_key}"})
    service_url = f"{app_url}/api/v1/verifications"
    issuers_url = f"{service_url}/issuers"
    records = [record for record in SIMULATED_RECORDS if record.result == "authentic"]

    print(f"{'latency':>8} {'direct p50':>11} {'service p50':>12} {'direct p95':>11} {'service p95':>12} "
          f"{'overhead p50':>13} {'baseline p50':>13} {'ratio p50':>10}")
    for latency in (float(value) for value in options.latencies.split(",")):
        requests.put(f"{simulator_url}/_simulator/behaviour",
                     json={"mode": "slow" if latency else "normal", "delay": latency}, timeout=5)
        direct, through, baseline = [], [], []
        for number in range(options.requests + 20):
            record = records[number % len(records)]
            started = time.perf_counter()
            adapters[record.registry].lookup(dict(record.identifiers))
            direct_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            response = service.post(service_url, json=record.request, timeout=30)
            service_ms = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise SystemExit(f"service answered {response.status_code}: {response.text[:200]}")
            started = time.perf_counter()
            service.get(issuers_url, timeout=30).raise_for_status()
            baseline_ms = (time.perf_counter() - started) * 1000
            if number >= 20:  # the first 20 warm up connections and caches
                direct.append(direct_ms)
                through.append(service_ms)
                baseline.append(baseline_ms)
        direct_p50, service_p50 = statistics.median(direct), statistics.median(through)
        print(f"{latency * 1000:>6.0f}ms {direct_p50:>9.2f}ms {service_p50:>10.2f}ms "
              f"{percentile(direct, 0.95):>9.2f}ms {percentile(through, 0.95):>10.2f}ms "
              f"{service_p50 - direct_p50:>11.2f}ms {statistics.median(baseline):>11.2f}ms "
              f"{service_p50 / direct_p50:>10.2f}")


if __name__ == "__main__":
    main()
