"""A `.env` in the working directory counts for gunicorn's settings and the metrics' too, as for the app's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import requests

from tests.conftest import REDIS_URL
from tests.ops.processes import BIN, ROOT, Processes, app_environment, free_port, wait_until_up
from tests.ops.test_metrics import samples, value

GUNICORN_SETTINGS = ("KARIBU_BIND", "WEB_CONCURRENCY", "KARIBU_THREADS", "LOG_FORMAT", "PROMETHEUS_MULTIPROC_DIR")


def _environment_without_gunicorn_settings(env: dict) -> dict:
    return {name: value for name, value in env.items() if name.upper() not in GUNICORN_SETTINGS}


# gunicorn's own loading of its settings (command line, then the config module), without starting a server.
LOAD_GUNICORN_SETTINGS = """
import json, os, sys
from gunicorn.app.wsgiapp import WSGIApplication
sys.argv = ["gunicorn", "-c", "python:ops.gunicorn_config", "wsgi:app"]
cfg = WSGIApplication().cfg
print(json.dumps({"bind": cfg.bind, "workers": cfg.workers, "threads": cfg.threads,
                  "json_logs": "pythonjsonlogger" in json.dumps(cfg.logconfig_dict),
                  "metrics_directory": os.environ["PROMETHEUS_MULTIPROC_DIR"]}))
"""


def gunicorn_settings(working_directory: Path, **environment: str) -> subprocess.CompletedProcess:
    env = _environment_without_gunicorn_settings(os.environ)
    env.update(PYTHONPATH=str(ROOT), **environment)
    return subprocess.run([sys.executable, "-c", LOAD_GUNICORN_SETTINGS], cwd=working_directory, env=env,
                          capture_output=True, text=True, timeout=60)


def loaded(completed: subprocess.CompletedProcess) -> dict:
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_gunicorn_takes_its_settings_from_dotenv(tmp_path):
    (tmp_path / ".env").write_text(f"KARIBU_BIND=127.0.0.1:9123\nweb_concurrency=5\nKARIBU_THREADS=7\n"
                                   f"LOG_FORMAT=json\nPROMETHEUS_MULTIPROC_DIR={tmp_path / 'metrics'}\n",
                                   encoding="utf-8")
    assert loaded(gunicorn_settings(tmp_path)) == {
        "bind": ["127.0.0.1:9123"], "workers": 5, "threads": 7, "json_logs": True,
        "metrics_directory": str(tmp_path / "metrics")}  # handed to the workers' prometheus-client

    # The environment wins over .env, as for every setting; without either, the defaults.
    assert loaded(gunicorn_settings(tmp_path, KARIBU_THREADS="3"))["threads"] == 3
    (tmp_path / ".env").unlink()
    defaults = loaded(gunicorn_settings(tmp_path))
    assert defaults["metrics_directory"].startswith(os.path.join(tempfile.gettempdir(), "karibu-metrics-"))
    assert {name: defaults[name] for name in ("bind", "workers", "threads", "json_logs")} == {
        "bind": ["127.0.0.1:8000"], "workers": (os.cpu_count() or 1) + 1, "threads": 2, "json_logs": False}


def test_a_malformed_gunicorn_setting_in_dotenv_stops_it_naming_the_setting(tmp_path):
    (tmp_path / ".env").write_text("KARIBU_THREADS=many\n", encoding="utf-8")
    completed = gunicorn_settings(tmp_path)
    assert completed.returncode != 0
    assert "Karibu cannot start: KARIBU_THREADS: " in completed.stderr
    assert "Traceback" not in completed.stderr


@pytest.fixture
def processes(tmp_path):
    running = Processes(tmp_path)
    yield running
    running.stop_all()


def test_the_metrics_directory_from_dotenv_collects_every_workers_metrics(app, database_url, processes, tmp_path):
    """PROMETHEUS_MULTIPROC_DIR only in `.env`: the workers write their metrics there and /metrics adds them up."""
    working_directory, directory = tmp_path / "run", tmp_path / "metrics-from-dotenv"
    working_directory.mkdir()
    (working_directory / ".env").write_text(f"PROMETHEUS_MULTIPROC_DIR={directory}\n", encoding="utf-8")
    env = _environment_without_gunicorn_settings(app_environment(database_url, REDIS_URL, tmp_path))
    env["PYTHONPATH"] = str(ROOT)
    port = free_port()
    server = processes.start([str(BIN / "gunicorn"), "-c", "python:ops.gunicorn_config", "--bind",
                              f"127.0.0.1:{port}", "--workers", "2", "wsgi:app"], env, "web", cwd=working_directory)
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base + "/healthz", server)

    before = _healthz_count(base)
    answered = sum(requests.get(base + "/healthz", timeout=10).status_code == 200 for _ in range(20))
    written = list(directory.iterdir())  # the workers' files, where .env said
    assert written and all(path.suffix == ".db" for path in written)
    # Every /healthz answered is counted, whichever of the two workers answered it.
    assert _healthz_count(base) - before == answered == 20


def _healthz_count(base: str) -> float:
    found = samples(requests.get(base + "/metrics", timeout=10).text)
    return value(found, "karibu_http_requests_total", endpoint="health.healthz", method="GET", status="200") or 0
