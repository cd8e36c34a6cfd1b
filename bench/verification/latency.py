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
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from core.verification.adapters import ADAPTERS, RegistryEndpoint  # noqa: E402
from devtools.simulated_records import SIMULATED_RECORDS  # noqa: E402

TOKENS = {"NESA": "bench-nesa-token", "UNEB": "bench-uneb-token", "KNEC": "bench-knec-token"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def flask(env: dict, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True).stdout


def wait_until_up(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=1).status_code < 500:
                return
        except requests.RequestException:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="requests per path and latency")
    parser.add_argument("--latencies", default="0,0.05,0.15", help="simulated registry latencies, seconds")
    parser.add_argument("--database-url", default="", help="default: a throwaway SQLite file")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    options = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="karibu-bench-"))
    simulator_port, app_port = free_port(), free_port()
    simulator_url = f"http://127.0.0.1:{simulator_port}"
    env = {
        **os.environ,
        "DATABASE_URL": options.database_url or f"sqlite:///{workdir / 'bench.db'}",
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/5"),
        "API_RATE_LIMIT": "1000000/minute",
        "LOG_LEVEL": "WARNING",
        "SECRET_KEY": "bench-secret-key-of-at-least-32-characters",
        "DOCUMENT_STORAGE_DIR": str(workdir / "documents"),
        "REGISTRY_READ_TIMEOUT": "10",
    }
    for code, token in TOKENS.items():
        env[f"REGISTRY_{code}_URL"] = f"{simulator_url}/{code.lower()}"
        env[f"REGISTRY_{code}_TOKEN"] = token

    flask(env, "db", "upgrade")
    institution_id = json.loads(flask(env, "institutions", "create", "Bench University", "--json"))["institution_id"]
    api_key = json.loads(flask(env, "api-keys", "create", "--institution", institution_id, "--json"))["api_key"]

    processes = [
        subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "registry-simulator", "--port",
                          str(simulator_port), "--quiet"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:ops.gunicorn_config", "-w",
                          str(options.workers), "-b", f"127.0.0.1:{app_port}", "--log-level", "warning", "wsgi:app"],
                         cwd=ROOT, env=env),
    ]
    try:
        wait_until_up(f"{simulator_url}/_simulator/health")
        wait_until_up(f"http://127.0.0.1:{app_port}/api/v1/openapi.json")
        run(options, simulator_url, app_port, api_key)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def run(options, simulator_url: str, app_port: int, api_key: str) -> None:
    adapters = {code: ADAPTERS[code](RegistryEndpoint(f"{simulator_url}/{code.lower()}", TOKENS[code], 3, 10))
                for code in TOKENS}
    service = requests.Session()
    service.headers.update({"Authorization": f"Bearer {api_key}"})
    service_url = f"http://127.0.0.1:{app_port}/api/v1/verifications"
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
