"""Two web processes and three workers on one PostgreSQL database and one Redis: cursors, sessions, the
rate limit and webhook claims work across them."""
from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from sqlalchemy import func, select

from core.events.emission import emit_webhook_test
from core.db import db
from core.models.webhooks import WebhookAttempt, WebhookDelivery
from core.queue import enqueue
from core.scoping import InstitutionScope
from core.webhooks.endpoints import save_endpoint
from core.webhooks.outbox import DRAIN_JOB, QUEUE_NAME
from tests.conftest import REDIS_URL, TEST_DB, auth_header
from tests.ops.processes import Processes, app_environment, free_port
from tests.ops.test_metrics import samples

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="several nodes share one PostgreSQL database")
EVENTS = 1000


class Receiver:
    """A local webhook receiver (plain HTTP on loopback) that counts every request per event id."""

    def __init__(self):
        self.received: Counter = Counter()
        self.all_in = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.received[self.headers["X-Karibu-Event-Id"]] += 1
                if len(receiver.received) >= EVENTS:
                    receiver.all_in.set()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # three workers x 16 sender threads connect at once

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cluster(app, database_url, tmp_path, redis_client):
    redis_client.flushdb()  # this test's own Redis database: no queued job of another test
    processes = Processes(tmp_path)
    env = app_environment(database_url, REDIS_URL, tmp_path, SECRET_KEY=app.config["SECRET_KEY"],
                          API_RATE_LIMIT="10/minute", WEBHOOK_ALLOW_PRIVATE_TARGETS="true", WEBHOOK_ALLOW_HTTP="true")
    try:
        nodes = [processes.gunicorn(env, name="web-a", workers=2), processes.gunicorn(env, name="web-b", workers=2)]
        workers = []
        for number in range(3):
            port = free_port()
            workers.append(processes.worker({**env, "WORKER_METRICS_PORT": str(port)}, name=f"worker-{number}"))
            workers[-1].metrics_url = f"http://127.0.0.1:{port}/metrics"
        yield nodes, workers
    finally:
        processes.stop_all()
        redis_client.flushdb()


def test_cursor_session_and_rate_limit_work_across_web_nodes(app, factory, cluster):
    (node_a, node_b), _ = cluster
    institution = factory.institution()
    for _ in range(5):
        factory.application(institution)
    _, raw_key = factory.api_key(institution)

    first = requests.get(node_a + "/api/v1/applications?limit=2", headers=auth_header(raw_key), timeout=10).json()
    second = requests.get(node_b + "/api/v1/applications", params={"limit": 2, "cursor": first["cursor"]},
                          headers=auth_header(raw_key), timeout=10)
    assert second.status_code == 200
    everything = requests.get(node_b + "/api/v1/applications?limit=10", headers=auth_header(raw_key),
                              timeout=10).json()["data"]
    assert [r["id"] for r in first["data"] + second.json()["data"]] == [r["id"] for r in everything[:4]]

    # A staff session started on node A is valid on node B (the same SECRET_KEY signs the cookie).
    user = factory.user(institution, password="correct-horse-1")
    browser = requests.Session()
    login_page = browser.get(node_a + "/login", timeout=10).text
    token = login_page.split('name="csrf-token" content="')[1].split('"')[0]
    signed_in = browser.post(node_a + "/login", data={"email": user.email, "password": "correct-horse-1",
                                                      "csrf_token": token}, allow_redirects=False, timeout=10)
    assert signed_in.status_code == 302
    dashboard = browser.get(node_b + "/dashboard", allow_redirects=False, timeout=10)
    assert dashboard.status_code == 200 and institution.name in dashboard.text

    # One limit of 10 per minute for the key, counted in Redis whichever node answers.
    _, limited_key = factory.api_key(institution, name="limited")
    statuses = [requests.get(node + "/api/v1/institution", headers=auth_header(limited_key), timeout=10).status_code
                for _ in range(7) for node in (node_a, node_b)]
    assert statuses.count(200) == 10 and statuses.count(429) == 4


def test_a_thousand_events_are_delivered_once_by_three_workers(app, factory, cluster, monkeypatch):
    _, workers = cluster
    receiver = Receiver()
    try:
        institution = factory.institution()
        monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
        monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_HTTP", True)
        with app.app_context():
            save_endpoint(InstitutionScope(institution.id), receiver.url)
            db.session.commit()
            for batch in range(10):
                for _ in range(EVENTS // 10):
                    emit_webhook_test(InstitutionScope(institution.id))
                db.session.commit()  # each commit queues a drain
            for _ in range(3):  # one drain per worker at once: they compete for the same due deliveries
                enqueue(QUEUE_NAME, DRAIN_JOB, result_ttl=0)
        assert receiver.all_in.wait(timeout=180), f"received {len(receiver.received)} of {EVENTS}"

        deadline = time.monotonic() + 60  # the last answers may still be being recorded
        while True:
            with app.app_context():
                deliveries = dict(db.session.execute(
                    select(WebhookDelivery.status, func.count())
                    .where(WebhookDelivery.institution_id == institution.id).group_by(WebhookDelivery.status)).all())
                attempts = dict(db.session.execute(
                    select(WebhookAttempt.error_class.is_(None), func.count()).join(WebhookDelivery)
                    .where(WebhookDelivery.institution_id == institution.id)
                    .group_by(WebhookAttempt.error_class.is_(None))).all())
                db.session.rollback()
            if deliveries.get("delivered") == EVENTS or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert len(receiver.received) == EVENTS
        duplicates = {event_id: count for event_id, count in receiver.received.items() if count > 1}
        assert duplicates == {}  # the receiver answered every request with 2xx: nothing was sent twice
        assert deliveries == {"delivered": EVENTS}
        # Exactly one successful attempt per event; any other attempt is an at-least-once retry after a
        # failed one (a connection the loaded machine dropped before the receiver saw it).
        assert attempts.get(True) == EVENTS
        drained_by = [w for w in workers if DRAIN_JOB in w.log_path.read_text()]
        assert len(drained_by) >= 2  # the claims were shared, not one worker doing everything

        # Each worker serves its own metrics; together they count every attempt once.
        delivered = latencies = 0.0
        for worker in workers:
            found = samples(requests.get(worker.metrics_url, timeout=10).text)
            delivered += found.get(("karibu_webhook_attempts_total",
                                    (("error_class", "none"), ("outcome", "delivered"))), 0)
            latencies += found.get(("karibu_webhook_delivery_latency_seconds_count", ()), 0)
        assert delivered == EVENTS and latencies == EVENTS
    finally:
        receiver.stop()
