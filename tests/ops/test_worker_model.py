"""The shipped gunicorn settings (ops/gunicorn_config.py) hand each request to a worker with a free thread: a short
request never waits behind long ones in a busy worker while another worker has a thread free."""
from __future__ import annotations

import socket
import threading
import time

import pytest
import requests

from tests.conftest import REDIS_URL
from tests.ops.processes import BIN, ROOT, Processes, app_environment, free_port, wait_until_up

SLOW_SECONDS = 4


@pytest.fixture
def two_by_two(database_url, tmp_path):
    """gunicorn with the shipped settings, 2 workers of 2 threads, serving tests/ops/worker_model_app.py."""
    processes = Processes(tmp_path)
    port = free_port()
    env = app_environment(database_url, REDIS_URL, tmp_path, KARIBU_THREADS="2", WEB_CONCURRENCY="2")
    process = processes.start([str(BIN / "gunicorn"), "-c", "python:ops.gunicorn_config", "--bind",
                               f"127.0.0.1:{port}", "tests.ops.worker_model_app:app"], env, "web", cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base + "/", process)
    yield base
    processes.stop_all()


def test_short_requests_go_to_the_free_thread_not_behind_long_ones(two_by_two):
    # Three of the four threads busy: one worker has both of its threads taken, the other one thread free.
    slow = [threading.Thread(target=requests.get, args=(f"{two_by_two}/slow",),
                             kwargs={"params": {"seconds": SLOW_SECONDS}, "timeout": 30}) for _ in range(3)]
    for thread in slow:
        thread.start()
        time.sleep(0.2)
    waits = []
    for _ in range(20):  # each on a new connection, which either worker could take
        started = time.monotonic()
        assert requests.get(f"{two_by_two}/fast", headers={"Connection": "close"}, timeout=30).status_code == 200
        waits.append(time.monotonic() - started)
    for thread in slow:
        thread.join()
    assert max(waits) < SLOW_SECONDS / 2, f"a short request waited behind a long one: {max(waits):.2f} s"


def test_connections_that_send_nothing_let_go_of_every_thread_within_seconds(two_by_two):
    port = int(two_by_two.rsplit(":", 1)[1])
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]  # one per thread of the node
    try:
        started = time.monotonic()
        assert requests.get(f"{two_by_two}/fast", timeout=30).status_code == 200
        assert time.monotonic() - started < 8
        for connection in silent:
            connection.settimeout(10)
            assert connection.recv(1) == b""  # closed by the server
    finally:
        for connection in silent:
            connection.close()
