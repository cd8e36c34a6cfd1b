"""Real `flask worker` processes for the tests of the worker's lanes, each logging to a file of the test's own."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REDIS_URL


def start_worker(engine, ca_path: str, database_url: str, log_path, *extra, redis_url: str = REDIS_URL,
                 **settings) -> subprocess.Popen:
    """A worker of the webhooks queue (its lane included) on the test database, trusting `ca_path`."""
    environment = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url,
                       SECRET_KEY=engine.config["SECRET_KEY"], WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
                       WEBHOOK_CA_BUNDLE=ca_path, PYTHONUNBUFFERED="1", **settings)
    log = open(log_path, "ab")
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "worker", "--queues", "webhooks",
                                *extra], env=environment, start_new_session=True, stdout=log,
                               stderr=subprocess.STDOUT)
    log.close()
    process.log_path = log_path
    return process


def end(process: subprocess.Popen) -> None:
    """Kill a worker and whatever it started, if still running."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)


def metric(port: int, name: str, labels: dict[str, str]) -> float | None:
    """A sample of the worker's /metrics (None when it has none, or the endpoint does not answer)."""
    try:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except requests.RequestException:
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return None


def children_of(pid: int) -> list[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def listening_inode(port: int) -> str | None:
    """The socket inode listening on 127.0.0.1/0.0.0.0 `port` (from /proc/net/tcp)."""
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                return fields[9]
    return None


def holds_socket(pid: int, inode: str) -> bool:
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for descriptor in descriptors:
        try:
            if os.readlink(f"/proc/{pid}/fd/{descriptor}") == f"socket:[{inode}]":
                return True
        except OSError:
            continue
    return False


def wait_for(condition, timeout: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return False
