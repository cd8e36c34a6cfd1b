"""A real gunicorn server on loopback for the bulk-docs benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

import requests

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def flask_cli(env: dict, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", *args],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"flask {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


class Server:
    """``gunicorn`` with one sync worker, so the worker's memory is the server's memory."""

    def __init__(self, env: dict, workers: int = 1, application: str = "wsgi:create_app()",
                 chdir: Path = REPO, probe: str = "/api/v1/openapi.json"):
        self.env = env
        self.application = application
        self.chdir = chdir
        self.probe = probe
        self.workers = workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(self.workers), "--worker-class", "sync",
             "--timeout", "600", "--bind", f"127.0.0.1:{self.port}", self.application],
            cwd=self.chdir, env=self.env, stdout=subprocess.DEVNULL, stderr=self.log,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                requests.head(f"{self.url}{self.probe}", timeout=10)
                return self
            except requests.RequestException:
                time.sleep(0.2)
        self.__exit__()
        raise SystemExit("the server did not start:\n" + self.log_text())

    def __exit__(self, *exc_info) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()

    def log_text(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-4000:]

    def worker_pids(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text()
        return [int(pid) for pid in children.split()]


def memory_kib(pid: int, field: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (peak so far) of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def base_env(**overrides: str) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("KARIBU_TEST")}
    env.update(
        EDGE_SHARED_SECRET="",
        API_RATE_LIMIT="100000/minute",
        REDIS_URL=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/4"),
        PYTHONPATH=str(REPO),
    )
    env.update(overrides)
    return env
