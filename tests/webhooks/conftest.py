from __future__ import annotations

import socket
import subprocess
import time
from datetime import datetime, timedelta

import pytest
import redis
from rq import Queue, SimpleWorker

from core.db import redis_connection
from core.models import utcnow
from core.webhooks.runtime import runtime
from tests.webhooks.webhook_receiver import FakeResolver, Receiver

RECEIVER_HOST = "hooks.receiver.test"


@pytest.fixture
def receiver(tmp_path):
    running = Receiver(tmp_path).start()
    yield running
    running.stop()


class ManualClock:
    """A controllable clock for the whole retry schedule (naive UTC)."""

    def __init__(self, start: datetime):
        self.current = start

    def now(self) -> datetime:
        return self.current

    def advance(self, delta: timedelta) -> None:
        self.current += delta

    def move_to(self, moment: datetime) -> None:
        self.current = max(self.current, moment)


@pytest.fixture
def clock(monkeypatch):
    manual = ManualClock(utcnow())
    monkeypatch.setattr(runtime, "clock", manual)
    return manual


@pytest.fixture
def resolver(monkeypatch):
    fake = FakeResolver({RECEIVER_HOST: [["127.0.0.1"]], "public.example.test": [["93.184.216.34"]]})
    monkeypatch.setattr(runtime, "resolver", fake)
    return fake


@pytest.fixture
def delivering(app, receiver, resolver, redis_client, monkeypatch):
    """Deliveries go to the local HTTPS receiver (private targets allowed for it, its CA trusted); yields it."""
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
    monkeypatch.setitem(app.config, "WEBHOOK_CA_BUNDLE", receiver.ca_path)
    redis_client.flushdb()
    yield receiver
    redis_client.flushdb()


@pytest.fixture
def engine(app, delivering, clock):
    """The app set up to deliver to the local HTTPS receiver, on a clock the test moves."""
    return app


def run_worker(app) -> None:
    """Run every queued webhook job in this process (RQ SimpleWorker, burst mode)."""
    with app.app_context():
        connection = redis_connection()
        SimpleWorker([Queue("webhooks", connection=connection)], connection=connection).work(burst=True)


def queued_jobs(app) -> int:
    with app.app_context():
        return Queue("webhooks", connection=redis_connection()).count


class RedisServer:
    """A private redis-server on a free loopback port, so a test may stop, restart and flush it."""

    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.data_dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()
        return self

    def stop(self) -> None:
        """Kill the server (its data is gone: nothing is persisted)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def flush(self) -> None:
        client = redis.Redis(port=self.port)
        client.flushall()
        client.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def own_redis(engine, tmp_path, monkeypatch):
    """The app (this process) switched to a private Redis server; stopped after the test."""
    server = RedisServer(tmp_path).start()
    monkeypatch.setitem(engine.config, "REDIS_URL", server.url)
    monkeypatch.delitem(engine.extensions, "karibu_redis", raising=False)  # the shared client, rebuilt lazily
    yield server
    engine.extensions.pop("karibu_redis", None)
    server.stop()


def wait_until(condition, timeout: float) -> bool:
    """Poll `condition` until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False
