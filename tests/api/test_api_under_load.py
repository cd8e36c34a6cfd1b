"""The per-request shortcuts of the API keep the spec's rules, checked on real gunicorn servers ("nodes").

- A revoked key is refused within one second by every node, each already holding the key in its credential
  cache, with Redis up or unreachable.
- No audit row is lost when a web worker is killed (SIGKILL) in the middle of traffic: every request that got
  a response has its row.
- Rate limits stay shared between nodes (one Redis round trip each), and fail open to per-process counting
  when Redis is unreachable.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
from sqlalchemy import select

from core.db import db
from core.accounts.api_keys import revoke_api_key
from core.models import AuditLog
from tests.conftest import REDIS_URL, TEST_SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
REVOCATION_BOUND_SECONDS = 1.0


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Node:
    """One gunicorn Karibu on the test database."""

    def __init__(self, database_url: str, log_path: Path, *, redis_url: str, workers: int = 1, threads: int = 4,
                 **settings: str):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        environment = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url, SECRET_KEY=TEST_SECRET_KEY,
                           API_RATE_LIMIT="1000000/minute", API_AUTH_FAILURE_RATE_LIMIT="1000000/minute",
                           PYTHONPATH=str(ROOT))
        environment.update(settings)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--threads", str(threads),
             "--bind", f"127.0.0.1:{self.port}", "--error-logfile", str(log_path), "wsgi:app"],
            cwd=ROOT, env=environment, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.base}/healthz", timeout=10).status_code == 200:
                    return
            except requests.RequestException:
                time.sleep(0.2)
        pytest.fail("a Karibu node did not start")

    def worker_pids(self) -> set[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return {int(pid) for pid in children}

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


@pytest.fixture
def start_nodes(app, database_url, tmp_path):
    """start_nodes(count, **settings) -> ready nodes sharing the test database; stopped after the test."""
    started: list[Node] = []

    def start(count: int, *, redis_url: str = REDIS_URL, **settings) -> list[Node]:
        nodes = [Node(database_url, tmp_path / f"node-{len(started) + n}.log", redis_url=redis_url, **settings)
                 for n in range(count)]
        started.extend(nodes)
        for node in nodes:
            node.wait_ready()
        return nodes

    yield start
    for node in started:
        node.stop()


def _get(node: Node, raw_key: str, path: str = "/api/v1/institution", **headers) -> requests.Response:
    return requests.get(f"{node.base}{path}", headers={"Authorization": f"Bearer {raw_key}", **headers}, timeout=30)


@pytest.mark.parametrize("redis_url", [REDIS_URL, UNREACHABLE_REDIS], ids=["redis-up", "redis-unreachable"])
def test_a_revoked_key_is_refused_within_a_second_by_every_warm_node(app, factory, start_nodes, redis_url):
    institution = factory.institution()
    key, raw_key = factory.api_key(institution)
    nodes = start_nodes(2, redis_url=redis_url)
    for node in nodes:  # warm: each node has looked the key up and holds it
        assert [_get(node, raw_key).status_code for _ in range(5)] == [200] * 5

    with app.app_context():  # another process than either node revokes it
        revoke_api_key(key.id)
    revoked_at = time.monotonic()

    # Every request sent a second or more after the revocation must be refused, by either node. (Timed by
    # when a request leaves, so a slow answer on a busy machine cannot be mistaken for a late refusal.)
    sent_after_bound = {index: [] for index in range(len(nodes))}
    while time.monotonic() - revoked_at < REVOCATION_BOUND_SECONDS + 1.5:
        for index, node in enumerate(nodes):
            sent = time.monotonic() - revoked_at
            response = _get(node, raw_key)
            assert response.status_code in (200, 401), response.text
            if response.status_code == 401:
                assert response.json()["error"] == "API key has been revoked"
            if sent >= REVOCATION_BOUND_SECONDS:
                sent_after_bound[index].append(response.status_code)
    for index, statuses in sent_after_bound.items():
        assert statuses and set(statuses) == {401}, f"node {index} answered {statuses} after the bound"


def test_no_audit_row_is_lost_when_a_web_worker_is_killed_mid_traffic(app, factory, start_nodes):
    _, raw_key = factory.api_key(factory.institution())
    (node,) = start_nodes(1, workers=2, threads=4)
    answered: list[str] = []
    failed = 0
    lock = threading.Lock()
    stop = threading.Event()

    def client() -> None:
        nonlocal failed
        session = requests.Session()
        while not stop.is_set():
            request_id = uuid.uuid4().hex
            try:
                response = session.get(f"{node.base}/api/v1/applications", timeout=30,
                                       headers={"Authorization": f"Bearer {raw_key}", "X-Request-Id": request_id})
            except requests.RequestException:  # the killed worker's connections: no answer, no promise
                with lock:
                    failed += 1
                session = requests.Session()
                continue
            with lock:
                answered.append(request_id)
            assert response.headers["X-Request-Id"] == request_id

    clients = [threading.Thread(target=client) for _ in range(8)]
    for thread in clients:
        thread.start()
    try:
        while len(answered) < 100:
            time.sleep(0.05)
        victim = min(node.worker_pids())
        os.kill(victim, signal.SIGKILL)
        answered_at_kill = len(answered)
        deadline = time.monotonic() + 60
        while (len(answered) < answered_at_kill + 100 or victim in node.worker_pids()) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=60)
    assert victim not in node.worker_pids() and len(node.worker_pids()) == 2, "gunicorn did not replace the worker"
    assert len(answered) >= answered_at_kill + 100, "traffic did not go on after the kill"

    with app.app_context():
        audited = set(db.session.scalars(select(AuditLog.request_id).where(AuditLog.request_id.in_(answered))))
    missing = [request_id for request_id in answered if request_id not in audited]
    assert not missing, f"{len(missing)} of {len(answered)} answered requests have no audit row ({failed} failed)"


def test_rate_limits_are_shared_between_nodes(factory, start_nodes):
    _, raw_key = factory.api_key(factory.institution())
    first, second = start_nodes(2, API_RATE_LIMIT="4/minute")
    statuses = [_get(node, raw_key).status_code for node in (first, second, first, second, first, second)]
    assert statuses == [200, 200, 200, 200, 429, 429]
    refused = _get(first, raw_key)
    assert refused.headers["X-RateLimit-Limit"] == "4" and refused.headers["X-RateLimit-Remaining"] == "0"
    assert 0 < int(refused.headers["Retry-After"]) <= 61


def test_rate_limits_fail_open_to_per_process_counting_when_redis_is_unreachable(factory, start_nodes):
    _, raw_key = factory.api_key(factory.institution())
    first, second = start_nodes(2, redis_url=UNREACHABLE_REDIS, API_RATE_LIMIT="3/minute")
    # Each node (one worker each) counts on its own: three each, then 429 from each.
    assert [_get(first, raw_key).status_code for _ in range(4)] == [200, 200, 200, 429]
    assert [_get(second, raw_key).status_code for _ in range(4)] == [200, 200, 200, 429]
    assert first.process.poll() is None and second.process.poll() is None
