from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from rq import Queue, SimpleWorker

from core.extensions import redis_connection
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
def engine(app, receiver, clock, resolver, redis_client, monkeypatch):
    """The app set up to deliver to the local HTTPS receiver (private targets allowed, its CA trusted)."""
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
    monkeypatch.setitem(app.config, "WEBHOOK_CA_BUNDLE", receiver.ca_path)
    redis_client.flushdb()
    yield app
    redis_client.flushdb()


def run_worker(app) -> None:
    """Run every queued webhook job in this process (RQ SimpleWorker, burst mode)."""
    with app.app_context():
        connection = redis_connection()
        SimpleWorker([Queue("webhooks", connection=connection)], connection=connection).work(burst=True)


def queued_jobs(app) -> int:
    with app.app_context():
        return Queue("webhooks", connection=redis_connection()).count
