"""The suite flushes only a Redis database marked as its own: checked against a private redis-server."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from tests.redis_guard import MARKER_KEY, GuardedRedis, UnmarkedRedisDatabase, mark_if_empty

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test only, on a free loopback port; its URL (database 3)."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is missing: install Debian's redis-server package")
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/3"
    client = redis.Redis.from_url(url)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("the private redis-server did not start")
        yield url
    finally:
        client.close()
        server.terminate()
        server.wait(timeout=10)


def _collect_with(url: str) -> subprocess.CompletedProcess:
    """Start a pytest session (collection only: nothing runs) with the suite pointed at `url`.

    Not as an xdist worker even when this test runs in one: the session must use `url`'s database itself."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_XDIST_")}
    environment["KARIBU_TEST_REDIS_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         "tests/architecture/test_redis_guard.py"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)


def test_flush_refuses_a_database_holding_someone_elses_data(private_redis):
    owner = redis.Redis.from_url(private_redis)
    owner.set("sessions:alice", "precious")
    guarded = GuardedRedis.from_url(private_redis)

    with pytest.raises(UnmarkedRedisDatabase, match="KARIBU_TEST_REDIS_URL"):
        guarded.flushdb()
    with pytest.raises(UnmarkedRedisDatabase):
        guarded.flushall()

    assert owner.get("sessions:alice") == b"precious"
    assert mark_if_empty(owner) is False
    assert owner.get(MARKER_KEY) is None


def test_a_session_stops_before_touching_a_foreign_database(private_redis):
    owner = redis.Redis.from_url(private_redis)
    owner.set("sessions:alice", "precious")

    run = _collect_with(private_redis)

    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert "is not marked as Karibu's test database" in run.stdout + run.stderr
    assert "KARIBU_TEST_REDIS_URL=redis://" in run.stdout + run.stderr
    assert owner.keys("*") == [b"sessions:alice"]


def test_an_empty_database_is_marked_and_then_flushed_keeping_the_mark(private_redis):
    run = _collect_with(private_redis)
    assert run.returncode == pytest.ExitCode.OK, run.stdout + run.stderr

    guarded = GuardedRedis.from_url(private_redis)
    assert guarded.get(MARKER_KEY) is not None
    guarded.set("rq:queue:webhooks", "job")
    guarded.flushdb()
    assert guarded.keys("*") == [MARKER_KEY.encode()]
    assert _collect_with(private_redis).returncode == pytest.ExitCode.OK
