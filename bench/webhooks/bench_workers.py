"""Webhook workers against a bare 16-thread loop, and 4 workers against 1 on a backlog: prints figures.

Rounds are interleaved (the reference runs next to each measurement) and repeated; min/median/max are
printed with the load average. Goals (issue 12):

1. One worker delivers >= 0.8 of a bare 16-thread signed-POST loop to an instant receiver, >= 0.9 to a
   receiver that answers after 100 ms.
2. With 10,000 deliveries due before the workers start, 4 workers deliver >= 3x what 1 does (100 ms receiver).
3. A receiver that takes 10 s delays no other delivery by more than its own slot: with one 10 s delivery
   oldest in the queue, the instant deliveries behind it finish about as fast as without it.

The receiver runs in its own process (HTTPS, trustme certificate, 127.0.0.1, a thread per connection); the
path `/delay/<ms>` sets its answer latency, so each institution's endpoint chooses one. Usage (from the
repository root, Redis and PostgreSQL running; the Redis database given is flushed):

    python bench/webhooks/bench_workers.py --database-url postgresql://.../karibu_bench_workers \
        [--redis-url redis://127.0.0.1:6379/6] [--rounds 3] [--events 2000] [--backlog 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.harness import load_average, server_env, spread  # noqa: E402

BARE_THREADS = 16  # as many as a worker's sender slots


# --- the receiver process -----------------------------------------------------------------------------------


def serve_receiver(directory: str) -> None:
    """Run the HTTPS receiver; print `READY <port> <ca>`, then per request answered
    `A <path> <event id> <unix time of its first byte> <unix time answered>`."""
    from http.server import BaseHTTPRequestHandler

    from tests.webhooks.webhook_receiver import Receiver

    out_lock = threading.Lock()

    class DelayingHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def parse_request(self):
            self.first_byte_at = time.time()  # the request line has just been read
            return super().parse_request()

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            parts = self.path.split("/")
            if len(parts) >= 3 and parts[1] == "delay":
                time.sleep(int(parts[2]) / 1000)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            with out_lock:
                sys.stdout.write(f"A {self.path} {self.headers.get('X-Karibu-Event-Id', '-')} "
                                 f"{self.first_byte_at:.6f} {time.time():.6f}\n")
                sys.stdout.flush()

    receiver = Receiver(Path(directory))
    receiver.server.RequestHandlerClass = DelayingHandler
    receiver.server.request_queue_size = 256
    print(f"READY {receiver.server.port} {receiver.ca_path}", flush=True)
    receiver.server.serve_forever(poll_interval=0.05)


class Arrival(NamedTuple):
    path: str
    event_id: str
    first_byte_at: float
    answered_at: float


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
            _, path, event_id, first_byte_at, answered_at = line.split()
            self.arrivals.put(Arrival(path, event_id, float(first_byte_at), float(answered_at)))

    def url(self, delay_ms: int) -> str:
        return f"https://localhost:{self.port}/delay/{delay_ms}"

    def collect(self, count: int, timeout: float) -> list[Arrival]:
        deadline = time.monotonic() + timeout
        got = []
        while len(got) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"only {len(got)} of {count} requests arrived")
            got.append(self.arrivals.get(timeout=remaining))
        return got

    def forget_arrivals(self) -> None:
        while not self.arrivals.empty():
            self.arrivals.get_nowait()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def bench_environment(args, workdir: str, receiver: ReceiverProcess) -> dict[str, str]:
    """This process's environment and the workers': the database of --database-url (default: a SQLite file in
    `workdir`), the Redis database of --redis-url, private targets allowed and the receiver's CA trusted."""
    environment = server_env(args.database_url or f"sqlite:///{workdir}/bench.db", REDIS_URL=args.redis_url,
                             WEBHOOK_ALLOW_PRIVATE_TARGETS="true", WEBHOOK_CA_BUNDLE=receiver.ca_path)
    os.environ.update(environment)
    return environment


# --- measurements ---------------------------------------------------------------------------------------------


def bare_loop(receiver: ReceiverProcess, delay_ms: int, count: int) -> float:
    """Signed POSTs from 16 threads of one process, each with its own keep-alive session; requests/s."""
    import requests

    from core.webhooks.signing import delivery_headers

    url = receiver.url(delay_ms)
    numbers = iter(range(count))
    numbers_lock = threading.Lock()

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
    receiver.collect(count, timeout=60)
    return count / elapsed


def emit(institution_id: str, count: int) -> None:
    """`count` test events for the institution, 250 per commit (each commit queues the usual wake-up)."""
    from core.events import emission
    from core.db import db
    from core.scoping import InstitutionScope

    scope = InstitutionScope(institution_id)
    for start in range(0, count, 250):
        for _ in range(min(250, count - start)):
            emission.emit_webhook_test(scope)
        db.session.commit()


def start_workers(environment: dict, how_many: int) -> list[subprocess.Popen]:
    command = [sys.executable, "-m", "flask", "--app", "wsgi", "worker", "--queues", "webhooks"]
    return [subprocess.Popen(command, env=environment, cwd=ROOT, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(how_many)]


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)  # leases of unfinished attempts are released below
    for worker in workers:
        worker.wait(timeout=30)


def release_leases() -> None:
    """Make every delivery a killed worker had leased due again (as the lapsed lease would, later)."""
    from sqlalchemy import update

    from core.db import db
    from core.models.webhooks import WebhookDelivery

    db.session.execute(update(WebhookDelivery).where(WebhookDelivery.lease_token.is_not(None))
                       .values(lease_token=None, lease_expires_at=None))
    db.session.commit()


def finish_all(receiver: ReceiverProcess) -> None:
    """Mark everything still due as delivered, so the next measurement starts from an empty queue."""
    from sqlalchemy import update

    from core.db import db
    from core.models.webhooks import SENDABLE_STATUSES, WebhookDelivery

    db.session.execute(update(WebhookDelivery).where(WebhookDelivery.status.in_(SENDABLE_STATUSES))
                       .values(status="delivered", next_attempt_at=None, lease_token=None, lease_expires_at=None))
    db.session.commit()
    time.sleep(0.5)
    receiver.forget_arrivals()


def rate(arrivals: list[Arrival]) -> float:
    times = sorted(arrival.answered_at for arrival in arrivals)
    return (len(times) - 1) / (times[-1] - times[0])


def backlog(environment, receiver, institution_id, how_many_workers, due, measured) -> float:
    """Delivered/s of `how_many_workers` worker processes started with `due` deliveries waiting, from the
    first to the `measured`-th arrival (worker start-up excluded)."""
    emit(institution_id, due)
    workers = start_workers(environment, how_many_workers)
    try:
        return rate(receiver.collect(measured, timeout=900))
    finally:
        stop_workers(workers)
        release_leases()
        finish_all(receiver)


def slow_slot(environment, receiver, slow_id, fast_id, count) -> tuple[float, float]:
    """Seconds until `count` instant deliveries arrive, with and without one 10 s delivery ahead of them."""
    results = []
    for with_slow in (False, True):
        workers = start_workers(environment, 1)
        try:
            time.sleep(2)
            if with_slow:
                emit(slow_id, 1)
            started = time.time()
            emit(fast_id, count)
            arrivals = []
            while len(arrivals) < count:
                arrivals += [a for a in receiver.collect(1, timeout=120) if a.path == "/delay/0"]
            results.append(max(arrival.answered_at for arrival in arrivals) - started)
        finally:
            stop_workers(workers)
            release_leases()
            finish_all(receiver)
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--events", type=int, default=2000, help="per instant-receiver measurement")
    parser.add_argument("--backlog", type=int, default=10000)
    parser.add_argument("--only", choices=("instant", "slow", "backlog", "slot"), action="append")
    parser.add_argument("--database-url", default=os.environ.get("KARIBU_BENCH_DATABASE_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("KARIBU_BENCH_REDIS_URL", "redis://127.0.0.1:6379/6"))
    parser.add_argument("--serve-receiver", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_receiver:
        serve_receiver(args.serve_receiver)
        return
    parts = set(args.only or ("instant", "slow", "backlog", "slot"))

    workdir = tempfile.mkdtemp(prefix="karibu-bench-")
    receiver = ReceiverProcess(workdir)
    environment = bench_environment(args, workdir, receiver)

    import redis
    from flask_migrate import upgrade

    from core.db import db
    from core.institutions import create_institution
    from core.scoping import InstitutionScope
    from core.webhooks.endpoints import save_endpoint
    from wsgi import create_app

    redis.Redis.from_url(args.redis_url).flushdb()
    app = create_app()
    figures: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)
        print(f"  {name}: {value:.2f}", flush=True)

    try:
        with app.app_context():
            upgrade(directory=str(ROOT / "migrations"))
            endpoints = {}
            for delay_ms in (0, 100, 10_000):
                institution = create_institution(f"Bench University {delay_ms} ms {time.time_ns()}")
                save_endpoint(InstitutionScope(institution.id), receiver.url(delay_ms))
                endpoints[delay_ms] = institution.id
            finish_all(receiver)
            print(f"Webhook workers benchmark ({db.engine.dialect.name}, {os.cpu_count()} cores shared with the "
                  f"receiver, the database and other work); load average {load_average()}")
            for round_number in range(1, args.rounds + 1):
                print(f"round {round_number}", flush=True)
                if "instant" in parts:
                    bare = bare_loop(receiver, 0, args.events)
                    worker = backlog(environment, receiver, endpoints[0], 1, args.events, args.events)
                    record("instant: bare 16-thread loop req/s", bare)
                    record("instant: one worker delivered/s", worker)
                    record("instant: ratio (goal >= 0.8)", worker / bare)
                if "slow" in parts:
                    count = max(200, args.events // 2)
                    bare = bare_loop(receiver, 100, count)
                    worker = backlog(environment, receiver, endpoints[100], 1, count, count)
                    record("100 ms: bare 16-thread loop req/s", bare)
                    record("100 ms: one worker delivered/s", worker)
                    record("100 ms: ratio (goal >= 0.9)", worker / bare)
                if "backlog" in parts:
                    measured_one = min(args.backlog, 3000)
                    single = backlog(environment, receiver, endpoints[100], 1, args.backlog, measured_one)
                    four = backlog(environment, receiver, endpoints[100], 4, args.backlog, args.backlog)
                    record("backlog, 100 ms: 1 worker delivered/s", single)
                    record("backlog, 100 ms: 4 workers delivered/s", four)
                    record("backlog, 100 ms: 4 workers / 1 (goal >= 3)", four / single)
                if "slot" in parts:
                    alone, behind_slow = slow_slot(environment, receiver, endpoints[10_000], endpoints[0], 500)
                    record("slot: 500 instant deliveries alone, s", alone)
                    record("slot: the same behind one 10 s delivery, s", behind_slow)
                print(f"  load average {load_average()}", flush=True)
    finally:
        receiver.stop()

    print("\nsummary over rounds (min / median / max):")
    for name, values in figures.items():
        print(f"  {name:48s} {spread(values, 2, labels=True, separator='  ')}")
    print(f"load average at the end {load_average()}")


if __name__ == "__main__":
    main()
