"""The input guard at the edge (ops/input_guard.py): the whole URL map walked with hostile values in every
position (path segment, query, form, header, cookie) answers only the documented 400, in the shape of the path,
with an audit row; a body the server cannot read (malformed chunks, sent raw to gunicorn and to werkzeug's
server) is a 400 too; and the walk is shown to fail without the guard."""
from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from core.db import db
from core.models import AuditLog
from api.openapi import openapi_document
from tests.conftest import REDIS_URL, app_config
from tests.openapi_check import assert_conforms
from tests.ops.processes import Processes, app_environment
from wsgi import create_app

# Percent-encoded, as a client puts them in a URL or a url-encoded form.
HOSTILE_ENCODED = {"NUL": "%00", "encoded surrogate": "%ED%A0%80", "not UTF-8": "%FF", "overlong NUL": "%C0%80",
                   "NUL inside": "ab%00cd"}
# As the server hands a header over (bytes as latin-1), and as a cookie value escapes them.
HOSTILE_HEADERS = {"NUL": "probe\x00", "not UTF-8": "caf\xe9", "encoded surrogate": "\xed\xa0\x80"}
HOSTILE_COOKIES = {"NUL": 'probe="\\000"', "not UTF-8": 'probe="\\377"'}
BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
NOT_TEXT = "must be text (UTF-8) without NUL characters"
DOCUMENTED_API_OPERATIONS = {(method.upper(), re.sub(r"\{([^}]+)\}", r"<\1>", path))
                             for path, operations in openapi_document()["paths"].items() for method in operations}


@dataclass(frozen=True)
class Probe:
    method: str
    rule: str
    position: str  # path:<argument> | query | form | header | cookie
    hostile: str

    def __str__(self):
        return f"{self.method} {self.rule} [{self.position} = {self.hostile!r}]"


def _path(rule, hostile_argument: str | None = None, value: str = "") -> str:
    def fill(match):
        name = match.group(1)
        return value if name == hostile_argument else "x1"
    return re.sub(r"<(?:[^<>:]+:)?([^<>]+)>", fill, rule.rule)


def probes(app) -> list[tuple[Probe, dict]]:
    """Every rule, every method, every position, every hostile value: (probe, test-client arguments)."""
    walked = []
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods):
            plain = _path(rule)
            for argument in sorted(rule.arguments):
                for value in HOSTILE_ENCODED.values():
                    walked.append((Probe(method, rule.rule, f"path:{argument}", value),
                                   dict(path=_path(rule, argument, value))))
            for value in HOSTILE_ENCODED.values():
                walked.append((Probe(method, rule.rule, "query", value), dict(path=f"{plain}?q={value}")))
                if method in BODY_METHODS:
                    walked.append((Probe(method, rule.rule, "form", value),
                                   dict(path=plain, data=f"email={value}&name=x",
                                        content_type="application/x-www-form-urlencoded")))
            for value in HOSTILE_HEADERS.values():
                walked.append((Probe(method, rule.rule, "header", value), dict(path=plain, headers={"X-Probe": value})))
            for value in HOSTILE_COOKIES.values():
                walked.append((Probe(method, rule.rule, "cookie", value), dict(path=plain, headers={"Cookie": value})))
    return walked


def _location(position: str) -> str:
    return {"query": "query", "form": "body", "header": "header", "cookie": "header"}.get(position, "path")


def undocumented(client, probe: Probe, arguments: dict) -> str | None:
    """None when the answer is the documented refusal, else what is wrong with it."""
    arguments = dict(arguments)
    response = client.open(arguments.pop("path"), method=probe.method, **arguments)
    if response.status_code != 400:
        return f"{probe}: {response.status_code}"
    if probe.method == "HEAD":  # the same answer without its body
        return None
    if probe.rule.startswith(("/api/", "/callbacks/")):
        body = response.get_json(silent=True) or {}
        if body.get("code") != 400 or [e["location"] for e in body.get("errors", [])] != [_location(probe.position)]:
            return f"{probe}: {body}"
        if (probe.method, probe.rule) in DOCUMENTED_API_OPERATIONS and probe.position in ("query", "header"):
            try:
                assert_conforms(response)  # the 400 is in the OpenAPI document of that operation
            except Exception as error:  # openapi-core's validation errors
                return f"{probe}: not as documented: {error}"
        return None
    page = response.get_data(as_text=True)
    if response.mimetype != "text/html" or NOT_TEXT not in page:
        return f"{probe}: {response.mimetype} {page[:200]}"
    return None


def test_every_route_and_method_answers_hostile_input_with_the_documented_400(app):
    client = app.test_client(use_cookies=False)  # the probe's Cookie header as sent, no cookie jar over it
    walked = probes(app)
    assert len({(probe.method, probe.rule) for probe, _ in walked}) >= 100  # the whole map, not a sample
    failures = [failure for probe, arguments in walked if (failure := undocumented(client, probe, arguments))]
    assert failures == []


def test_without_the_guard_the_walk_finds_undocumented_answers(database_url, tmp_path):
    """The control: the same walk against an app whose guard hook is taken out fails."""
    unguarded = create_app(app_config(database_url, tmp_path / "documents"))
    hooks = unguarded.before_request_funcs[None]
    hooks[:] = [hook for hook in hooks if hook.__name__ != "refuse_input_that_is_not_text"]
    client = unguarded.test_client(use_cookies=False)
    failures = []
    for probe, arguments in probes(unguarded):
        if probe.position in ("path:applicant_id", "query") and probe.rule in ("/applicants/<applicant_id>", "/login"):
            failures += [failure for failure in [undocumented(client, probe, arguments)] if failure]
    assert failures


def refused_rows(app) -> list[AuditLog]:
    with app.app_context():
        rows = list(db.session.scalars(select(AuditLog).where(AuditLog.action == "request.refused")
                                       .order_by(AuditLog.id)))
        for row in rows:
            db.session.expunge(row)
        return rows


def test_refusals_are_audited_with_the_bad_bytes_escaped(app, client):
    assert client.post("/login?next=%00", data={"email": "a"}).status_code == 400
    assert client.get("/applicants/ab%00cd").status_code == 400
    assert client.get("/api/v1/applications/app%00x").status_code == 400
    assert client.get("/api/v1/nowhere%00").status_code == 400
    assert client.get("/decisions/respond/secret%00token").status_code == 400
    assert client.post("/callbacks/payments/flutterwave", headers={"X-Probe": "a\x00"}, json={}).status_code == 400
    rows = refused_rows(app)
    assert [(row.source, row.status, row.target) for row in rows] == [
        ("portal", 400, "query: query string"), ("portal", 400, "path: path"), ("api", 400, "path: path"),
        ("api", 400, "path: path"), ("public", 400, "path: path"), ("callback", 400, "header: X-Probe")]
    assert rows[1].path == "/applicants/ab\\x00cd" and rows[2].path == "/api/v1/applications/app\\x00x"
    assert rows[4].path == "/decisions/respond/[REDACTED]"  # the token route's parameter, masked as always
    assert "secret" not in " ".join(row.path + row.query for row in rows)


def test_ordinary_text_passes(app, client):
    """Accents, Swahili and emoji in a query and a form are text: the guard lets them through."""
    assert client.get("/login?next=/applicants?q=Ng%C5%A9g%C4%A9%20%F0%9F%98%80").status_code == 200
    response = client.post("/login", data={"email": "wanjikũ@example.ac.ke", "password": "é"})
    assert response.status_code == 400 and "form expired" in response.get_data(as_text=True)  # CSRF, not the guard


@pytest.fixture
def gunicorn(app, database_url, tmp_path):
    processes = Processes(tmp_path)
    env = app_environment(database_url, REDIS_URL, tmp_path, SECRET_KEY=app.config["SECRET_KEY"],
                          TRIAL_API_KEY="sk_trial_demo", FLUTTERWAVE_SECRET_HASH="flw-hash")
    try:
        yield int(processes.gunicorn(env, workers=1).rsplit(":", 1)[1])
    finally:
        processes.stop_all()


def raw_exchange(port: int, request: bytes) -> tuple[int, dict | str]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body) if body.startswith(b"{") else body.decode("utf-8", "replace")


MALFORMED_CHUNKS = [b"zz\r\nabc\r\n0\r\n\r\n", b"5\r\nab", b"3\r\nabcdef\r\n0\r\n\r\n"]


@pytest.mark.parametrize(("method", "path", "credential"), [
    ("PATCH", "/api/v1/applications/update", "live key"),
    ("POST", "/api/v1/verifications", "trial key"),
    ("POST", "/callbacks/payments/flutterwave", "Flutterwave hash"),
])
def test_malformed_chunked_bodies_sent_raw_to_gunicorn_are_a_400(gunicorn, factory, method, path, credential):
    headers = {"live key": f"Authorization: Bearer {factory.api_key(factory.institution())[1]}\r\n",
               "trial key": "Authorization: Bearer sk_trial_demo\r\n",
               "Flutterwave hash": "verif-hash: flw-hash\r\n"}[credential]
    for chunks in MALFORMED_CHUNKS:
        request = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   f"Transfer-Encoding: chunked\r\n{headers}Connection: close\r\n\r\n").encode() + chunks
        status, body = raw_exchange(gunicorn, request)
        assert status == 400, (chunks, body)
        assert body["code"] == 400 and body["errors"][0]["location"] == "body", body
