"""Webhook delivery benchmark: prints figures, asserts nothing.

1. Throughput: delivered webhooks per second by ONE worker process (`flask --app wsgi worker`) to a local
   HTTPS receiver, against a bare loop of signed POSTs from 16 threads of one process (requests, keep-alive)
   to the same receiver. Target ratio >= 0.8. (`bench_workers.py` adds a 100 ms receiver, 4 workers against
   1 on a backlog, and the 10 s receiver.)
2. Dispatch latency with an idle worker: from the start of the commit that emits an event to the first
   byte of the request at the receiver, p50 and p99 (goal p99 <= 200 ms).

The receiver runs in its own process (trustme certificates, 127.0.0.1 only) and reports arrival times.
Usage (from the repository root, Redis running):

    python bench/webhooks/bench_delivery.py [--events 1000] [--samples 200]
        [--database-url postgresql://...] [--redis-url redis://127.0.0.1:6379/6]

The Redis database given is flushed. Without --database-url a temporary SQLite file is used.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BARE_THREADS = 16  # as many as a worker's sender threads


# --- the receiver process -----------------------------------------------------------------------------------


def serve_receiver(directory: str) -> None:
    """Run the HTTPS receiver; print `READY <port> <ca>` then `ARRIVED <event_id> <unix time>` per request."""
    from http.server import BaseHTTPRequestHandler

    from tests.webhooks.webhook_receiver import Receiver

    lock = threading.Lock()

    class TimedHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def parse_request(self):
            self.first_byte_at = time.time()  # the request line has just been read
            return super().parse_request()

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            event_id = self.headers.get("X-Karibu-Event-Id") or json.loads(body).get("event_id", "-")
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            with lock:
                sys.stdout.write(f"ARRIVED {event_id} {self.first_byte_at:.6f}\n")
                sys.stdout.flush()

    receiver = Receiver(Path(directory))
    receiver.server.RequestHandlerClass = TimedHandler
    print(f"READY {receiver.server.port} {receiver.ca_path}", flush=True)
    receiver.server.serve_forever(poll_interval=0.05)


class ReceiverProcess:
    def __init__(self, directory: str):
        self.process = subprocess.Popen([sys.executable, __file__, "--serve-receiver", directory],
                                        stdout=subprocess.PIPE, text=True, cwd=ROOT)
        ready = self.process.stdout.readline().split()
        self.port, self.ca_path = int(ready[1]), ready[2]
        self.arrivals: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            _, event_id, at = line.split()
            self.arrivals.put((event_id, float(at)))

    def collect(self, count: int, timeout: float) -> list[tuple[str, float]]:
        deadline = time.monotonic() + timeout
        got = []
        while len(got) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"only {len(got)} of {count} requests arrived")
            got.append(self.arrivals.get(timeout=remaining))
        return got

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


# --- measurements ---------------------------------------------------------------------------------------------


def bare_loop(receiver: ReceiverProcess, count: int) -> float:
    """Signed POSTs from 16 threads of one process (as many as a worker's sender threads), each with its own
    keep-alive session; returns requests per second."""
    import requests

    from core.webhooks.signing import delivery_headers

    numbers = iter(range(count))
    numbers_lock = threading.Lock()
    url = f"https://localhost:{receiver.port}/hooks"

    def send():
        session = requests.Session()
        while True:
            with numbers_lock:
                number = next(numbers, None)
            if number is None:
                return
            event_id = f"evt_bare{number}"
            body = json.dumps({"event_id": event_id, "type": "webhook.test", "occurred_at": "2026-01-01T00:00:00Z",
                               "institution_id": "ins_bench", "data": {"message": "bench"}},
                              separators=(",", ":")).encode()
            headers = delivery_headers(secret="whsec_bench", timestamp=int(time.time()), body=body,
                                       event_id=event_id, event_type="webhook.test", institution_id="ins_bench")
            session.post(url, data=body, headers=headers, verify=receiver.ca_path, timeout=10).raise_for_status()

    threads = [threading.Thread(target=send) for _ in range(BARE_THREADS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    receiver.collect(count, timeout=30)
    return count / elapsed


def start_worker(environment: dict, burst: bool) -> subprocess.Popen:
    command = [sys.executable, "-m", "flask", "--app", "wsgi", "worker", "--queues", "webhooks"]
    if burst:
        command.append("--burst")
    return subprocess.Popen(command, env=environment, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--database-url", default=os.environ.get("KARIBU_BENCH_DATABASE_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("KARIBU_BENCH_REDIS_URL", "redis://127.0.0.1:6379/6"))
    parser.add_argument("--serve-receiver", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_receiver:
        serve_receiver(args.serve_receiver)
        return

    workdir = tempfile.mkdtemp(prefix="karibu-bench-")
    database_url = args.database_url or f"sqlite:///{workdir}/bench.db"
    receiver = ReceiverProcess(workdir)
    environment = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=args.redis_url,
                       SECRET_KEY="bench-secret-key-of-at-least-32-characters", WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
                       WEBHOOK_CA_BUNDLE=receiver.ca_path, LOG_LEVEL="WARNING")
    os.environ.update(environment)

    import redis
    from flask_migrate import upgrade

    from core import events
    from core.extensions import db
    from core.institutions import create_institution
    from core.scoping import InstitutionScope
    from core.webhooks.endpoints import save_endpoint
    from wsgi import create_app

    redis.Redis.from_url(args.redis_url).flushdb()
    app = create_app()
    worker = None
    try:
        with app.app_context():
            upgrade(directory=str(ROOT / "migrations"))
            institution = create_institution(f"Bench University {time.time_ns()}")
            save_endpoint(InstitutionScope(institution.id), f"https://127.0.0.1:{receiver.port}/hooks")

            print(f"Webhook delivery benchmark ({db.engine.dialect.name}, {os.cpu_count()} cores shared "
                  f"with the receiver and other work on this machine)")
            bare_rate = bare_loop(receiver, args.events)
            print(f"bare 16-thread loop:           {bare_rate:8.1f} requests/s  ({args.events} requests)")

            started = time.perf_counter()
            for _ in range(args.events):
                events.emit_webhook_test(InstitutionScope(institution.id))
                db.session.commit()
            emit_rate = args.events / (time.perf_counter() - started)
            print(f"events emitted (one commit each): {emit_rate:8.1f} events/s")

            worker = start_worker(environment, burst=True)
            arrivals = receiver.collect(args.events, timeout=600)
            worker.wait(timeout=120)
            times = sorted(at for _, at in arrivals)
            worker_rate = (len(times) - 1) / (times[-1] - times[0])
            print(f"one worker process:            {worker_rate:8.1f} delivered/s  (first to last arrival)")
            print(f"ratio worker / bare loop:      {worker_rate / bare_rate:8.2f}  (target >= 0.8)")

            worker = start_worker(environment, burst=False)
            time.sleep(3)  # let the worker start and go idle
            latencies = []
            for _ in range(args.samples):
                event = events.emit_webhook_test(InstitutionScope(institution.id))
                committed_at = time.time()
                db.session.commit()
                event_id, arrived_at = receiver.collect(1, timeout=30)[0]
                assert event_id == event.id, (event_id, event.id)
                latencies.append((arrived_at - committed_at) * 1000)
                time.sleep(0.05)
            latencies.sort()
            p50 = statistics.median(latencies)
            p99 = latencies[min(len(latencies) - 1, int(round(0.99 * len(latencies))) - 1)]
            print(f"commit -> first byte, idle worker: p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
                  f"max {latencies[-1]:6.1f} ms  ({len(latencies)} samples; goal p99 <= 200 ms)")
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
        receiver.stop()


if __name__ == "__main__":
    main()
