"""/healthz and /readyz (a private Redis and a database behind a stoppable forwarder), and JSON log lines."""
from __future__ import annotations

import io
import json
import logging
import shutil
import subprocess
import time
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests

from tests.conftest import REDIS_URL, TEST_DB, app_config, auth_header
from tests.ops.processes import Processes, app_environment, free_port
from tests.ops.tcp_proxy import TcpProxy
from wsgi import create_app


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test's own, which it may stop and start again."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()

    def start():
        process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                    "--appendonly", "no", "--dir", str(tmp_path)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                import redis
                redis.Redis(port=port, socket_timeout=0.2).ping()
                return process
            except Exception:  # noqa: BLE001
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    server = {"process": start()}

    class Control:
        url = f"redis://127.0.0.1:{port}/0"

        def stop(self):
            server["process"].terminate()
            server["process"].wait()

        def start(self):
            server["process"] = start()

    yield Control()
    if server["process"].poll() is None:
        server["process"].terminate()
        server["process"].wait()


def test_healthz_answers_without_dependencies(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json["status"] == "ok"
    assert set(response.json) <= {"status", "redis_faults"}  # in-process counters only, no dependency
    assert response.headers["Cache-Control"] == "no-store"


def test_readyz_goes_unavailable_when_redis_stops_and_comes_back(app, database_url, tmp_path, private_redis):
    ready_app = create_app({**app_config(database_url, tmp_path / "docs"), "REDIS_URL": private_redis.url,
                            "READINESS_TIMEOUT": 0.5})
    client = ready_app.test_client()
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json["checks"] == {"database": "ok", "redis": "ok", "migrations": "ok"}

    private_redis.stop()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json["failing"] == ["redis"] and response.json["checks"]["redis"] == "unreachable"
    assert client.get("/healthz").status_code == 200  # alive, just not ready

    private_redis.start()
    assert client.get("/readyz").status_code == 200


@pytest.mark.skipif(TEST_DB != "postgres", reason="the database is stopped by cutting its TCP connection")
def test_readyz_goes_unavailable_when_the_database_stops_and_comes_back(app, database_url, tmp_path):
    parts = urlsplit(database_url)
    proxy = TcpProxy(parts.hostname, parts.port or 5432).start()
    proxied = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
    ready_app = create_app({**app_config(proxied, tmp_path / "docs"), "READINESS_TIMEOUT": 1.0})
    client = ready_app.test_client()
    try:
        assert client.get("/readyz").status_code == 200
        proxy.stop()
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.json["failing"] == ["database"]
        assert response.json["checks"]["database"] == "unreachable"
        proxy.start()
        assert client.get("/readyz").status_code == 200
    finally:
        proxy.stop()


def test_readyz_names_migrations_not_at_head(app, database_url, tmp_path):
    ready_app = create_app(app_config(database_url, tmp_path / "docs"))
    ready_app.extensions["karibu_migration_heads"] = {"9999_future"}
    response = ready_app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.json["failing"] == ["migrations"] and response.json["checks"]["migrations"] == "not_at_head"


def test_json_logs_one_object_per_line(app, database_url, tmp_path, factory):
    json_app = create_app({**app_config(database_url, tmp_path / "docs"), "LOG_FORMAT": "json"})
    stream = io.StringIO()
    [handler] = [h for h in logging.getLogger().handlers if getattr(h, "karibu", False)]
    handler.setStream(stream)
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    client = json_app.test_client()
    assert client.get("/api/v1/applications", headers={**auth_header(raw_key), "X-Request-Id": "req-log-test-1"}
                      ).status_code == 200
    with json_app.test_request_context("/x"):
        json_app.logger.warning("a note with ünïcode")

    lines = [json.loads(line) for line in stream.getvalue().splitlines()]  # every line parses
    [request_line] = [line for line in lines if line["logger"] == "karibu.request"]
    assert request_line["request_id"] == "req-log-test-1"
    assert request_line["institution_id"] == institution.id
    assert request_line["method"] == "GET" and request_line["path"] == "/api/v1/applications"
    assert request_line["status"] == 200 and isinstance(request_line["duration_ms"], float)
    assert request_line["level"] == "INFO" and request_line["time"]
    [note] = [line for line in lines if line["message"] == "a note with ünïcode"]
    assert note["level"] == "WARNING" and note["logger"] == "wsgi"


def test_json_logs_of_a_gunicorn_server_all_parse(app, database_url, tmp_path):
    processes = Processes(tmp_path)
    try:
        base = processes.gunicorn(app_environment(database_url, REDIS_URL, tmp_path, LOG_FORMAT="json"),
                                  name="json-web")
        assert requests.get(base + "/readyz", headers={"X-Request-Id": "req-gunicorn-json"}, timeout=10).ok
    finally:
        processes.stop_all()
    lines = [json.loads(line) for line in (tmp_path / "json-web.log").read_text().splitlines()]
    assert {line["logger"] for line in lines} >= {"gunicorn.error", "karibu.request"}
    [ready] = [line for line in lines if line.get("request_id") == "req-gunicorn-json"]
    assert ready["path"] == "/readyz" and ready["status"] == 200 and ready["method"] == "GET"
