"""gunicorn (Karibu or any WSGI app) on a free loopback port, waiting for a server, its workers' memory."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import requests

from bench.harness.env import PROJECT_ROOT, server_env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(url: str, what: str, seconds: float = 120, *, process: subprocess.Popen | None = None,
                       log: IO[bytes] | None = None) -> None:
    """Wait until `url` answers over HTTP (any status); SystemExit naming `what` (with the end of `log`) when
    `process` exits first or after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}{_tail(log)}")
        try:
            with requests.get(url, timeout=5, stream=True):  # the body is not read: a probe only
                return
        except requests.RequestException:
            time.sleep(0.2)
    raise SystemExit(f"{what} did not start within {seconds:.0f} s{_tail(log)}")


def _tail(log: IO[bytes] | None) -> str:
    if log is None:
        return ""
    log.seek(0)
    return ":\n" + log.read().decode("utf-8", "replace")[-4000:]


@dataclass
class Server:
    url: str
    process: subprocess.Popen

    def worker_pids(self) -> list[int]:
        """The gunicorn master's children (its workers), by pid."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return sorted(int(pid) for pid in children)


@contextmanager
def gunicorn(app: str = "wsgi:app", *, env: dict[str, str] | None = None, source: Path = PROJECT_ROOT,
             workers: int | None = None, threads: int | None = None, worker_class: str | None = None,
             deployed: bool = False, timeout: int | None = None, pythonpath: Path | None = None,
             probe: str = "/healthz", start_seconds: float = 120) -> Iterator[Server]:
    """gunicorn serving `app` from the directory `source` on a free 127.0.0.1 port, until the block ends.

    `env` defaults to server_env(source=source). `deployed` starts it with the production settings
    (`-c python:ops.gunicorn_config`), `workers` and `threads` given as WEB_CONCURRENCY and KARIBU_THREADS, the
    other arguments overriding them; otherwise gunicorn's own defaults
    apply to what is not given. Ready once `probe` answers; its log is shown if it does not start. Stopped with
    SIGTERM to its process group (only the processes started here), SIGKILL after a minute.
    """
    port = free_port()
    command = [sys.executable, "-m", "gunicorn"]
    env = dict(env if env is not None else server_env(source=source))
    if deployed:
        command += ["-c", "python:ops.gunicorn_config"]
        # As an operator sets them, so that the settings derived from them (connections per worker) follow.
        env.update({name: str(value) for name, value in (("WEB_CONCURRENCY", workers), ("KARIBU_THREADS", threads))
                    if value is not None})
        workers = threads = None
    command += ["--bind", f"127.0.0.1:{port}", "--log-level", "warning"]
    for option, value in (("--workers", workers), ("--threads", threads), ("--worker-class", worker_class),
                          ("--timeout", timeout), ("--pythonpath", pythonpath)):
        if value is not None:
            command += [option, str(value)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([*command, app], cwd=source,
                                   env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=log)
        try:
            server = Server(f"http://127.0.0.1:{port}", process)
            wait_until_serving(server.url + probe, f"gunicorn {app} from {source}", start_seconds, process=process,
                               log=log)
            yield server
        finally:
            stop(process)


def stop(process: subprocess.Popen, seconds: float = 60) -> None:
    """SIGTERM to the process group of `process` (started with start_new_session=True), SIGKILL after
    `seconds`."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def memory_kib(pid: int, field: str = "VmHWM") -> int:
    """`VmHWM` (the peak resident set size so far) or `VmRSS` (now) of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(f"no {field} for pid {pid}")


def rss_pss_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in KiB; PSS counts its share of the pages it has in common with others."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":"):
                fields[parts[0][:-1]] = int(parts[1]) if parts[1].isdigit() else 0
    return fields["Rss"], fields["Pss"]
