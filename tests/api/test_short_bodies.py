"""A body shorter than its Content-Length, sent raw to a real gunicorn, is a 400 in the documented shape and
nothing of it is applied: whether the client half-closes, closes, or keeps the connection open and stops sending
(then after REQUEST_BODY_TIMEOUT_SECONDS)."""
from __future__ import annotations

import json
import socket
import time

import pytest
from sqlalchemy import select

from core.db import db
from core.models import Application
from tests.conftest import REDIS_URL
from tests.ops.processes import Processes, app_environment

BODY_TIMEOUT_SECONDS = 3
UPDATE = "/api/v1/applications/update"


@pytest.fixture
def gunicorn(app, database_url, tmp_path):
    """The port of a real gunicorn on the test database, its body timeout short."""
    processes = Processes(tmp_path)
    env = app_environment(database_url, REDIS_URL, tmp_path, SECRET_KEY=app.config["SECRET_KEY"],
                          REQUEST_BODY_TIMEOUT_SECONDS=str(BODY_TIMEOUT_SECONDS))
    try:
        yield int(processes.gunicorn(env, workers=1).rsplit(":", 1)[1])
    finally:
        processes.stop_all()


@pytest.fixture
def applicant(factory, tenant):
    return factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)


def update_request(tenant, applicant, missing: int) -> bytes:
    """A valid update (to `interview`) whose Content-Length claims `missing` bytes more than are sent."""
    body = json.dumps({"updates": [{"id": applicant.id, "stage": "interview"}]}).encode()
    return (f"PATCH {UPDATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {tenant.raw_key}\r\nContent-Length: {len(body) + missing}\r\n\r\n").encode() + body


def read_answer(connection: socket.socket) -> tuple[int, dict]:
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def stage_of(app, applicant) -> str:
    with app.app_context():
        stage = db.session.scalar(select(Application.stage).where(Application.id == applicant.id))
        db.session.rollback()
        return stage


def assert_unreadable_body(status: int, body: dict) -> None:
    assert status == 400, body
    assert body["code"] == 400 and body["error"].startswith("The request body could not be read"), body
    assert [error["location"] for error in body["errors"]] == ["body"], body


def test_the_whole_body_is_applied(app, gunicorn, tenant, applicant):
    """The control: the same request with its true length."""
    with socket.create_connection(("127.0.0.1", gunicorn), timeout=30) as connection:
        connection.sendall(update_request(tenant, applicant, missing=0))
        status, body = read_answer(connection)
    assert (status, body["updated"]) == (200, 1), body
    assert stage_of(app, applicant) == "interview"


def test_a_body_cut_short_then_half_closed_is_a_400_and_nothing_is_applied(app, gunicorn, tenant, applicant):
    with socket.create_connection(("127.0.0.1", gunicorn), timeout=30) as connection:
        connection.sendall(update_request(tenant, applicant, missing=500))
        connection.shutdown(socket.SHUT_WR)
        assert_unreadable_body(*read_answer(connection))
    assert stage_of(app, applicant) == "submitted"


def test_a_body_cut_short_by_a_closed_connection_applies_nothing(app, gunicorn, tenant, applicant):
    with socket.create_connection(("127.0.0.1", gunicorn), timeout=30) as connection:
        connection.sendall(update_request(tenant, applicant, missing=500))
    time.sleep(2)  # the server has read what was sent, and the end of the connection
    with socket.create_connection(("127.0.0.1", gunicorn), timeout=30) as connection:  # it still serves
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert connection.recv(65536).startswith(b"HTTP/1.1 200")
    assert stage_of(app, applicant) == "submitted"


def test_a_client_that_stops_sending_mid_body_gets_a_400_after_the_body_timeout(app, gunicorn, tenant, applicant):
    with socket.create_connection(("127.0.0.1", gunicorn), timeout=BODY_TIMEOUT_SECONDS + 30) as connection:
        connection.sendall(update_request(tenant, applicant, missing=500))
        started = time.monotonic()
        answer = read_answer(connection)  # the connection stays open: only the server's timeout ends the wait
        waited = time.monotonic() - started
    assert_unreadable_body(*answer)
    assert waited >= BODY_TIMEOUT_SECONDS - 0.5
    assert stage_of(app, applicant) == "submitted"


def test_a_chunked_body_whose_client_stops_sending_is_a_400_after_the_body_timeout(app, gunicorn, tenant,
                                                                                    applicant):
    body = json.dumps({"updates": [{"id": applicant.id, "stage": "interview"}]}).encode()
    head = (f"PATCH {UPDATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {tenant.raw_key}\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", gunicorn), timeout=BODY_TIMEOUT_SECONDS + 30) as connection:
        connection.sendall(head + b"%x\r\n%s\r\n" % (len(body), body))  # no last chunk: the body never ends
        assert_unreadable_body(*read_answer(connection))
    assert stage_of(app, applicant) == "submitted"
