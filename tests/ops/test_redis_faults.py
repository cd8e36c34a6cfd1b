"""Redis down, frozen or flushed: API reads and writes, the apply form and payment callbacks still work.

Each test starts its own redis-server and a Karibu web server (gunicorn, a separate process, so the faults
never reach the rest of the suite) on the test database, then stops, freezes (SIGSTOP) or flushes Redis and
goes through HTTP. Figures for docs/performance.md: run with `-s` to see the measured latencies.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
import requests
from sqlalchemy import func, select

from core.db import db
from core.models import Application, Payment
from core.models.webhooks import WebhookDelivery
from core.scoping import InstitutionScope
from core.webhooks.endpoints import save_endpoint
from tests.conftest import TEST_SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]
REDIS_SERVER = "/usr/bin/redis-server"
FLUTTERWAVE_HASH = "flw-dashboard-secret-hash-for-fault-tests"
API_LIMIT = 12
# A bound against hanging only (a client without timeouts waits for ever); the real figure is in the docs.
HANG_BOUND_SECONDS = 5.0
ONE_TIMEOUT_BOUND_SECONDS = 0.95  # one 0.5 s Redis timeout and the request's own work, never two timeouts
_CSRF_INPUT = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')

pytestmark = pytest.mark.skipif(not os.path.exists(REDIS_SERVER), reason="redis-server is not installed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OwnRedis:
    """A private redis-server this test may stop, freeze and flush."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=1)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        self.client = client

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)

    def freeze(self):
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self):
        self.process.send_signal(signal.SIGCONT)

    def flush(self):
        self.client.flushdb()

    def close(self):
        if self.process.poll() is None:
            self.thaw()
            self.stop()


@pytest.fixture
def own_redis():
    server = OwnRedis()
    yield server
    server.close()


@pytest.fixture
def karibu(app, database_url, own_redis, tmp_path):
    """A gunicorn Karibu on the test database and the private Redis; yields its base URL."""
    port = free_port()
    environment = dict(
        os.environ, DATABASE_URL=database_url, REDIS_URL=own_redis.url, SECRET_KEY=TEST_SECRET_KEY,
        FLUTTERWAVE_SECRET_HASH=FLUTTERWAVE_HASH, API_RATE_LIMIT=f"{API_LIMIT}/minute",
        DOCUMENT_STORAGE_DIR=str(tmp_path / "documents"), WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        WEBHOOK_ALLOW_HTTP="true", PYTHONPATH=str(ROOT))
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", "1", "--threads", "4", "--bind", f"127.0.0.1:{port}",
         "--error-logfile", str(tmp_path / "gunicorn.log"), "wsgi:app"],
        cwd=ROOT, env=environment, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{base}/healthz", timeout=10).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.2)
        else:
            pytest.fail("the Karibu server did not start")
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a request still stuck (only if the timeouts regress)
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)


@dataclass
class School:
    institution: object
    key: str
    cycle: object
    program: object
    applications: list
    stages: list
    timings: dict = field(default_factory=dict)


@pytest.fixture
def school(app, factory, monkeypatch):
    """An institution with a live key, an open cycle, unpaid applications and a webhook endpoint (so every
    write also makes a delivery and tries to wake a worker through Redis)."""
    institution = factory.institution()
    _, key = factory.api_key(institution)
    program = factory.program(institution, fee="45000", currency="RWF")
    cycle = factory.cycle(institution, programs=[program])
    applications = [factory.application(institution, program=program, cycle=cycle) for _ in range(3)]
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_HTTP", True)
    with app.app_context():
        save_endpoint(InstitutionScope(institution.id), "http://127.0.0.1:9/karibu-hook")
    return School(institution, key, cycle, program, applications, factory.stages(institution))


def timed(timings: dict, name: str, call):
    started = time.perf_counter()
    response = call()
    timings[name] = time.perf_counter() - started
    return response


def exercise(base: str, school: School, round_number: int) -> dict:
    """API list, API PATCH, the apply form and a payment callback; returns {operation: seconds}."""
    timings: dict = {}
    headers = {"Authorization": f"Bearer {school.key}"}
    listing = timed(timings, "api_list", lambda: requests.get(
        f"{base}/api/v1/applications", headers=headers, timeout=30))
    assert listing.status_code == 200, listing.text
    target = school.applications[round_number]
    patched = timed(timings, "api_patch", lambda: requests.patch(
        f"{base}/api/v1/applications/update", headers=headers, timeout=30,
        json={"updates": [{"id": target.id, "stage": school.stages[1], "decision": "accepted",
                           "send_decision": True}]}))
    assert patched.status_code == 200, patched.text
    browser = requests.Session()
    form = browser.get(f"{base}/apply/{school.institution.id}", timeout=30)
    assert form.status_code == 200
    fields = {"csrf_token": _CSRF_INPUT.search(form.text).group(1), "cycle_id": school.cycle.id,
              "program_id": school.program.id, "first_name": "Aimée", "last_name": f"Uwimana{round_number}",
              "email": f"aimee{round_number}@example.com", "phone": "+250 788 123 456"}
    applied = timed(timings, "apply_form", lambda: browser.post(
        f"{base}/apply/{school.institution.id}", data=fields, allow_redirects=False, timeout=30))
    assert applied.status_code == 302, applied.text
    paid = timed(timings, "payment_callback", lambda: requests.post(
        f"{base}/callbacks/payments/flutterwave", headers={"verif-hash": FLUTTERWAVE_HASH}, timeout=30,
        json={"event": "charge.completed", "data": {
            "id": 9100 + round_number, "tx_ref": target.id, "flw_ref": "FLW-fault", "amount": 45000,
            "currency": "RWF", "charged_amount": 45000, "status": "successful",
            "customer": {"email": "x@example.com"}}}))
    assert paid.status_code == 200, paid.text
    return timings


def committed(app, school: School) -> dict:
    with app.app_context():
        ids = [application.id for application in school.applications]
        return {
            "accepted": db.session.scalar(select(func.count()).select_from(Application).where(
                Application.id.in_(ids), Application.decision == "accepted")),
            "applied": db.session.scalar(select(func.count()).select_from(Application).where(
                Application.institution_id == school.institution.id)) - len(ids),
            "payments": db.session.scalar(select(func.count()).select_from(Payment).where(
                Payment.application_id.in_(ids))),
            "pending_deliveries": db.session.scalar(select(func.count()).select_from(WebhookDelivery).where(
                WebhookDelivery.institution_id == school.institution.id, WebhookDelivery.status == "pending")),
        }


def report(label: str, timings: dict) -> None:
    print(f"\n{label}: " + ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in timings.items()))


def test_redis_down_reads_writes_forms_and_callbacks_still_work(app, karibu, own_redis, school):
    report("Redis up", exercise(karibu, school, 0))
    own_redis.stop()
    report("Redis down", exercise(karibu, school, 1))
    state = committed(app, school)
    assert (state["accepted"], state["applied"], state["payments"]) == (2, 2, 2)
    assert state["pending_deliveries"] >= 4  # the outbox kept every event for the sweep
    ready = requests.get(f"{karibu}/readyz", timeout=30)
    assert ready.status_code == 503 and ready.json()["failing"] == ["redis"]
    health = requests.get(f"{karibu}/healthz", timeout=30)
    assert health.status_code == 200  # the process itself is alive
    faults = health.json()["redis_faults"]
    assert faults.get("rate_limit", 0) >= 1 and faults.get("queue", 0) >= 1, faults
    # Limits fall back to in-process counting: the key's budget still runs out.
    headers = {"Authorization": f"Bearer {school.key}"}
    statuses = [requests.get(f"{karibu}/api/v1/cycles", headers=headers, timeout=30).status_code
                for _ in range(API_LIMIT + 1)]
    assert statuses[-1] == 429 and set(statuses) == {200, 429}


def test_redis_frozen_requests_do_not_hang(app, karibu, own_redis, school):
    report("Redis up", exercise(karibu, school, 0))
    own_redis.freeze()
    frozen = exercise(karibu, school, 1)
    report("Redis frozen (first requests)", frozen)
    again = exercise(karibu, school, 2)
    report("Redis frozen (later requests)", again)
    own_redis.thaw()
    assert max(frozen.values()) < HANG_BOUND_SECONDS and max(again.values()) < HANG_BOUND_SECONDS
    # At most one Redis timeout (0.5 s) per request, the rate limiter's recovery probe included (not two).
    assert max(frozen.values()) < ONE_TIMEOUT_BOUND_SECONDS and max(again.values()) < ONE_TIMEOUT_BOUND_SECONDS, (
        frozen, again)
    state = committed(app, school)
    assert (state["accepted"], state["applied"], state["payments"]) == (3, 3, 3)


def test_redis_flushed_mid_run_changes_nothing_visible(app, karibu, own_redis, school):
    exercise(karibu, school, 0)
    own_redis.flush()
    exercise(karibu, school, 1)
    state = committed(app, school)
    assert (state["accepted"], state["applied"], state["payments"]) == (2, 2, 2)
    assert requests.get(f"{karibu}/healthz", timeout=30).status_code == 200
