"""Issue #12's API-under-load ratio: wrk against Karibu and a minimal Flask app on the same gunicorn settings.

For each run, in turn (interleaved, so a busy shared machine weighs on both alike): the baseline app
(bench/harness/baseline_app.py, a body the size of Karibu's list page), then each Karibu source tree given,
each driven by wrk with 32 keep-alive connections for `--duration` seconds:

- list: `GET /api/v1/applications?limit=50` with a live key of the bench database's biggest institution;
- verification: `POST /api/v1/verifications` with the public trial key (a demo record);
- floor: `GET /api/v1/verifications/issuers` with the live key: authentication, the rate limit, the audit row
  and Flask, and no query of its own, so its ratio is the most any API endpoint can reach under those rules;
- baseline: `GET /` of the baseline app.

Prints req/s, p50 and p99 per run and min/median/max with the ratio to the baseline of the same run, and the
load average. Targets (#12): list ≥ 0.15 of the baseline with p99 ≤ 100 ms, verification ≥ 0.3.

    DATABASE_URL=postgresql+psycopg://…/karibu_bench python bench/load/wrk_ratio.py --runs 3 \\
        --tree before=/tmp/karibu-main --tree after=. [--gunicorn 2x4 --gunicorn 4x1]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import (  # noqa: E402
    PROJECT_ROOT, TRIAL_KEY, bench_institution_id, gunicorn, load_average, new_api_key, server_env, spread,
)

LIST_PATH = "/api/v1/applications?limit=50"
FLOOR_PATH = "/api/v1/verifications/issuers"
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(url: str, duration: int, connections: int, headers: dict[str, str], body: str | None = None) -> dict:
    script = None
    if body is not None:
        script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
        script.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n')
        script.close()
    command = ["wrk", "--latency", "--timeout", "30s", "-t", "2", "-c", str(connections), "-d", f"{duration}s", url]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    if script is not None:
        command += ["-s", script.name]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    latencies = {int(p): float(v) * _UNITS[u] for p, v, u in re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s)\s*$",
                                                                         output, re.M)}
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
            "p50": latencies[50], "p99": latencies[99], "errors": int(non_2xx.group(1)) if non_2xx else 0}


def warm(url: str, headers: dict[str, str], body: str | None = None, requests_count: int = 20) -> None:
    """Sequential requests first: each worker's first requests load what the app loads lazily (OpenAPI
    document, compiled statements), which on a busy machine takes seconds and would stall wrk's clients."""
    for _ in range(requests_count):
        if body is None:
            requests.get(url, headers=headers, timeout=120)
        else:
            requests.post(url, headers=headers, data=body, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--gunicorn", action="append", default=[], metavar="WORKERSxTHREADS[:CLASS]",
                        help="gunicorn settings to measure, e.g. 2x4 or 4x1:sync; repeat to compare several "
                             "(each against the baseline on the same settings; default 3x2, as shipped)")
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=PATH of a Karibu source tree (default: this one, as 'karibu')")
    options = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    trees = [(name, Path(path).resolve()) for name, path in (t.split("=", 1) for t in options.tree)] \
        or [("karibu", PROJECT_ROOT)]
    configurations = [_gunicorn_settings(text) for text in options.gunicorn or ["3x2:gthread"]]
    key = new_api_key(bench_institution_id(), "load bench")
    live = {"Authorization": f"Bearer {key}"}
    trial = {"Authorization": f"Bearer {TRIAL_KEY}", "Content-Type": "application/json"}
    print(f"gunicorn {', '.join(label for label, _ in configurations)}; {options.connections} connections, "
          f"{options.duration} s per measurement, load {load_average()}")

    results: dict[tuple[str, str], list[dict]] = {}
    body_bytes, verification_body = None, None
    for run in range(1, options.runs + 1):
        for label, settings in configurations:
            for name, source in [("baseline", PROJECT_ROOT), *trees]:
                app = "bench.harness.baseline_app:app" if name == "baseline" else "wsgi:app"
                if name == "baseline" and body_bytes is None:
                    with gunicorn("wsgi:app", source=trees[-1][1], **settings) as server:
                        base = server.url
                        body_bytes = len(requests.get(base + LIST_PATH, headers=live, timeout=60).content)
                        issuers = requests.get(base + "/api/v1/verifications/issuers", headers=trial,
                                               timeout=60).json()
                        verification_body = json.dumps(_first_demo_request(issuers))
                    print(f"list body {body_bytes} bytes; verification body {verification_body}")
                extra = {"BASELINE_BODY_BYTES": str(body_bytes)} if name == "baseline" else {}
                with gunicorn(app, source=source, env=server_env(source=source, **extra), **settings) as server:
                    base = server.url
                    if name == "baseline":
                        wrk(base + "/", options.warmup, options.connections, {})
                        measured = {"list": wrk(base + "/", options.duration, options.connections, {})}
                    else:
                        warm(base + LIST_PATH, live)
                        warm(base + "/api/v1/verifications", trial, verification_body)
                        wrk(base + LIST_PATH, options.warmup, options.connections, live)
                        measured = {"list": wrk(base + LIST_PATH, options.duration, options.connections, live)}
                        url = base + "/api/v1/verifications"
                        wrk(url, options.warmup, options.connections, trial, verification_body)
                        measured["verification"] = wrk(url, options.duration, options.connections, trial,
                                                       verification_body)
                        wrk(base + FLOOR_PATH, options.warmup, options.connections, live)
                        measured["floor"] = wrk(base + FLOOR_PATH, options.duration, options.connections, live)
                measured["load"] = load_average()
                results.setdefault((label, name), []).append(measured)
                print(f"run {run} {label:10s} {name:10s} " + "  ".join(
                    f"{what}: {m['rps']:.0f} req/s p50 {m['p50']:.1f} ms p99 {m['p99']:.1f} ms"
                    + (f" ({m['errors']} non-2xx)" if m["errors"] else "")
                    for what, m in measured.items() if what != "load") + f"  load {measured['load']}", flush=True)

    print("\nmin / median / max over the runs; ratio = req/s over the baseline's req/s of the same run and settings")
    for label, _ in configurations:
        baseline = [m["list"]["rps"] for m in results[(label, "baseline")]]
        print(f"{label:10s} baseline                {spread(baseline)} req/s")
        for name, _ in trees:
            for what in ("list", "verification", "floor"):
                runs = [m[what] for m in results[(label, name)]]
                ratios = [m["rps"] / b for m, b in zip(runs, baseline)]
                print(f"{label:10s} {name:10s} {what:12s} {spread([m['rps'] for m in runs])} req/s, "
                      f"p50 {spread([m['p50'] for m in runs], 1)} ms, p99 {spread([m['p99'] for m in runs], 1)} ms, "
                      f"ratio {spread(ratios, 3)}")
    print(f"load average at the end: {load_average()}")


def _gunicorn_settings(text: str) -> tuple[str, dict]:
    """`4x1` or `4x1:sync` → (label, keyword arguments of `gunicorn()`)."""
    shape, _, worker_class = text.partition(":")
    workers, threads = (int(part) for part in shape.split("x"))
    worker_class = worker_class or "gthread"
    return f"{workers}x{threads}:{worker_class}", dict(workers=workers, threads=threads, worker_class=worker_class)


def _first_demo_request(issuers: dict) -> dict:
    for issuer in issuers.get("data", issuers.get("issuers", [])):
        for request in issuer.get("demo_requests", []):
            return request
    raise SystemExit(f"no demo request in /verifications/issuers: {str(issuers)[:300]}")


if __name__ == "__main__":
    main()
