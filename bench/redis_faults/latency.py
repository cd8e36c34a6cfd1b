"""Request latency with Redis up, frozen (SIGSTOP) and down: what a Redis fault adds to each request.

Starts, on loopback only, a private redis-server and Karibu under gunicorn on a throwaway SQLite database
seeded with Demo University (and a webhook endpoint, so changes wake a worker through Redis), then for each phase sends --rounds rounds of: an API list, an API PATCH (stage
and decision with send_decision, so an event, a delivery row and a drain wake-up), and an apply-form POST.
Prints p50/max per operation and phase and the extra p50 over the healthy phase. Bounded; stops by itself.

    python bench/redis_faults/latency.py [--rounds 20]
"""
from __future__ import annotations

import argparse
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import flask_cli, flask_json, free_port, gunicorn, server_env  # noqa: E402

CSRF_INPUT = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


class Karibu:
    def __init__(self, base: str, institution_id: str, key: str):
        self.base, self.institution_id = base, institution_id
        self.headers = {"Authorization": f"Bearer {key}"}
        self.sent = self.rounds = 0

    def round(self, number: int, stages: list[str]) -> dict[str, float]:
        timings = {}
        started = time.perf_counter()
        listing = requests.get(f"{self.base}/api/v1/applications?limit=100", headers=self.headers, timeout=60)
        timings["api_list"] = time.perf_counter() - started
        listing.raise_for_status()
        self.rounds += 1  # every round changes an application not changed before, so every PATCH emits
        target = listing.json()["data"][self.rounds % 100]["id"]
        started = time.perf_counter()
        patched = requests.patch(f"{self.base}/api/v1/applications/update", headers=self.headers, timeout=60,
                                 json={"updates": [{"id": target, "stage": stages[number % len(stages)],
                                                    "decision": "accepted", "send_decision": True}]})
        timings["api_patch"] = time.perf_counter() - started
        patched.raise_for_status()
        browser = requests.Session()
        form = browser.get(f"{self.base}/apply/{self.institution_id}", timeout=60)
        choices = re.findall(r'<option value="((?:cyc|prg)_[A-Za-z0-9]+)"', form.text)
        cycle = next(value for value in choices if value.startswith("cyc_"))
        program = next(value for value in choices if value.startswith("prg_"))
        self.sent += 1
        fields = {"csrf_token": CSRF_INPUT.search(form.text).group(1), "cycle_id": cycle, "program_id": program,
                  "first_name": "Bench", "last_name": f"Applicant{self.sent}", "phone": "+250 788 000 000",
                  "email": f"bench{self.sent}.{time.time_ns()}@example.com"}
        started = time.perf_counter()
        applied = browser.post(f"{self.base}/apply/{self.institution_id}", data=fields, allow_redirects=False,
                               timeout=60)
        timings["apply_form"] = time.perf_counter() - started
        if applied.status_code != 302:
            raise SystemExit(f"apply form answered {applied.status_code}")
        return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="per phase, at most 30")
    options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="karibu-redis-faults-"))
    redis_port = free_port()
    redis_server = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--daemonize", "no"], stdout=subprocess.DEVNULL)
    env = server_env(f"sqlite:///{workdir / 'karibu.db'}", REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
                     DOCUMENT_STORAGE_DIR=str(workdir / "documents"), WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
                     WEBHOOK_ALLOW_HTTP="true")
    try:
        flask_cli("db", "upgrade", env=env)
        seeded = flask_json("seed-demo", "--applications", "100", env=env)
        # A webhook endpoint, so every change also writes a delivery and wakes a worker through Redis.
        flask_cli("webhooks", "set", "--institution", seeded["institution_id"], "--url",
                  "http://127.0.0.1:9/karibu-hook", env=env)
        with gunicorn("wsgi:app", env=env, workers=1, threads=4) as web:
            measure(options, web.url, seeded, redis_server)
    finally:
        if redis_server.poll() is None:
            redis_server.send_signal(signal.SIGCONT)
            redis_server.terminate()
            redis_server.wait(timeout=10)


def measure(options, base: str, seeded: dict, redis_server: subprocess.Popen) -> None:
    """Every phase's rounds against the server at `base`, `redis_server` up, frozen, then stopped; prints the
    table."""
    karibu = Karibu(base, seeded["institution_id"], seeded["api_key"])
    stages = [stage["id"] for stage in requests.get(f"{base}/api/v1/institution", headers=karibu.headers,
                                                     timeout=60).json()["institution"]["stages"]]
    results: dict[str, dict[str, list[float]]] = {}
    for phase in ("up", "frozen", "down"):
        if phase == "frozen":
            redis_server.send_signal(signal.SIGSTOP)
        elif phase == "down":
            redis_server.send_signal(signal.SIGCONT)
            redis_server.terminate()
            redis_server.wait(timeout=10)
        karibu.round(0, stages)  # warm-up (connection pools, first fault)
        rounds = [karibu.round(number, stages) for number in range(min(options.rounds, 30))]
        results[phase] = {name: [r[name] for r in rounds] for name in rounds[0]}
    print(f"{options.rounds} rounds per phase (after one warm-up round); milliseconds")
    print(f"{'operation':<12} {'phase':<7} {'p50':>7} {'max':>7} {'extra p50':>10}")
    for name in results["up"]:
        healthy = statistics.median(results["up"][name])
        for phase, operations in results.items():
            timings = operations[name]
            p50 = statistics.median(timings)
            print(f"{name:<12} {phase:<7} {p50 * 1000:7.0f} {max(timings) * 1000:7.0f} "
                  f"{(p50 - healthy) * 1000:10.0f}")


if __name__ == "__main__":
    main()
