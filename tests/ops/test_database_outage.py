"""A database outage is a 503 with Retry-After (JSON for the API and the callbacks, a plain page for the portal),
through gunicorn: never a 500, never gunicorn's own HTML page."""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import pytest
import requests

from api.openapi import openapi_document
from core.db import DATABASE_RETRY_AFTER_SECONDS
from tests.conftest import REDIS_URL, TEST_DB, auth_header
from tests.openapi_check import assert_matches_component
from tests.ops.processes import Processes, app_environment, free_port
from tests.ops.tcp_proxy import TcpProxy

FLUTTERWAVE_HASH = "flw-secret-hash-for-the-outage-tests"
CHARGE = {"event": "charge.completed",
          "data": {"id": 4242, "status": "successful", "tx_ref": "00000000-0000-0000-0000-000000000000",
                   "amount": 45000, "currency": "RWF"}}


@pytest.fixture
def processes(tmp_path):
    running = Processes(tmp_path)
    yield running
    running.stop_all()


def assert_database_unavailable_json(response: requests.Response) -> None:
    assert response.status_code == 503, response.text[:300]
    assert response.headers["Retry-After"] == str(DATABASE_RETRY_AFTER_SECONDS)
    assert response.headers["Content-Type"].startswith("application/json")
    assert_matches_component(response.json(), "ServerError")
    assert response.json() == {"code": 503, "error": "The database is unavailable: retry after the number "
                                                     "of seconds in Retry-After"}


def assert_database_unavailable_page(response: requests.Response) -> None:
    assert response.status_code == 503, response.text[:300]
    assert response.headers["Retry-After"] == str(DATABASE_RETRY_AFTER_SECONDS)
    assert response.headers["Content-Type"].startswith("text/html")
    assert "Temporarily unavailable" in response.text
    assert "Internal Server Error" not in response.text  # gunicorn's own page


def requests_of_every_kind(base: str, key: str, institution_id: str) -> dict[str, requests.Response]:
    return {
        "api": requests.get(f"{base}/api/v1/applications", headers=auth_header(key), timeout=15),
        "callback": requests.post(f"{base}/callbacks/payments/flutterwave", json=CHARGE,
                                  headers={"verif-hash": FLUTTERWAVE_HASH}, timeout=15),
        "portal": requests.get(f"{base}/apply/{institution_id}", timeout=15),
    }


def test_the_openapi_document_gives_every_operation_its_503():
    for path, operations in openapi_document()["paths"].items():
        for method, operation in operations.items():
            if method in {"get", "put", "post", "patch", "delete"}:
                assert "503" in operation["responses"], f"{method.upper()} {path}"


def test_a_closed_database_port_is_a_503_everywhere(app, factory, processes, tmp_path):
    """The first query of each request fails: nothing answers on the database's port."""
    institution = factory.institution()
    _, key = factory.api_key(institution)
    closed = f"postgresql://karibu@127.0.0.1:{free_port()}/karibu"
    env = app_environment(closed, REDIS_URL, tmp_path, FLUTTERWAVE_SECRET_HASH=FLUTTERWAVE_HASH)
    base = processes.gunicorn(env, workers=1)

    answers = requests_of_every_kind(base, key, institution.id)
    assert_database_unavailable_json(answers["api"])
    assert_database_unavailable_json(answers["callback"])
    assert_database_unavailable_page(answers["portal"])


@pytest.mark.skipif(TEST_DB != "postgres", reason="the database is stopped by cutting its TCP connection")
def test_connections_cut_under_a_running_server_are_503s_and_it_recovers(app, factory, database_url,
                                                                         processes, tmp_path):
    """The pool's connections die with the database: each request meets a dead connection, then none at all."""
    institution = factory.institution()
    _, key = factory.api_key(institution)
    parts = urlsplit(database_url)
    proxy = TcpProxy(parts.hostname, parts.port or 5432).start()
    proxied = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
    env = app_environment(proxied, REDIS_URL, tmp_path, FLUTTERWAVE_SECRET_HASH=FLUTTERWAVE_HASH)
    base = processes.gunicorn(env, workers=1)
    try:
        before = requests_of_every_kind(base, key, institution.id)
        assert before["api"].status_code == 200 and before["portal"].status_code == 200

        proxy.stop()
        for _ in range(2):  # first on the pooled connections cut under it, then on no connection at all
            answers = requests_of_every_kind(base, key, institution.id)
            assert_database_unavailable_json(answers["api"])
            assert_database_unavailable_json(answers["callback"])
            assert_database_unavailable_page(answers["portal"])

        proxy.start()  # same port: the database is back
        after = requests_of_every_kind(base, key, institution.id)
        assert after["api"].status_code == 200 and after["portal"].status_code == 200
    finally:
        proxy.stop()
