"""Start Karibu's real processes (gunicorn, RQ workers) for a test, and stop them afterwards."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SECRET = "operations-test-secret-key-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def app_environment(database_url: str, redis_url: str, tmp_path: Path, **extra: str) -> dict:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "SECRET_KEY": SECRET,
           "DOCUMENT_STORAGE_DIR": str(tmp_path / "documents"), "KARIBU_INSTANCE_DIR": str(tmp_path / "instance"),
           "PYTHONUNBUFFERED": "1"}
    env.update(extra)
    return env


class Processes:
    """Every process started through it is stopped (SIGTERM, then SIGKILL) by `stop_all`."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen] = []

    def start(self, args: list[str], env: dict, name: str, cwd: Path = ROOT) -> subprocess.Popen:
        log = open(self.tmp_path / f"{name}.log", "wb")
        process = subprocess.Popen(args, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        process.log_path = self.tmp_path / f"{name}.log"
        self.started.append(process)
        return process

    def gunicorn(self, env: dict, name: str = "web", workers: int = 2) -> str:
        port = free_port()
        process = self.start([str(BIN / "gunicorn"), "-c", "python:ops.gunicorn_config",
                              "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "wsgi:app"], env, name)
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base + "/healthz", process)
        return base

    def worker(self, env: dict, name: str = "worker") -> subprocess.Popen:
        return self.start([sys.executable, "-m", "flask", "--app", "wsgi", "worker"], env, name)

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.started:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def wait_until_up(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{url} exited early:\n{process.log_path.read_text()[-3000:]}")
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not come up:\n{process.log_path.read_text()[-3000:]}")
