import ast
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import MetaData, select, text

import core.audit.recording
from core.audit.recording import redact_path
from core.applications.decision_answers import decision_response_token
from core.db import db
from core.models import AuditLog, Decision, utcnow
from tests.conftest import auth_header
from tests.portal.conftest import csrf_token, sign_in

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_CSRF_INPUT = re.compile(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"')


def _dump_database(app) -> str:
    """Every value of every table as text: what an attacker with a database dump would see."""
    with app.app_context():
        metadata = MetaData()
        metadata.reflect(bind=db.engine)
        chunks = []
        with db.engine.connect() as connection:
            for table in metadata.sorted_tables:
                for row in connection.execute(select(table)):
                    chunks.append(" ".join(str(value) for value in row))
        return "\n".join(chunks)


def test_audit_rows_never_hold_secrets(app, client, factory):
    institution = factory.institution()
    key, canary_key = factory.api_key(institution)
    national_id = "1199880012345678"
    client.get(f"/api/v1/institution?api_key={canary_key}&national_id={national_id}&note={canary_key}"
               f"&token=abc&q=whsec_deadbeef", headers={**auth_header(canary_key), "User-Agent": "sync/1.0"})
    client.get("/api/v1/institution", headers=auth_header(canary_key + "x"))

    dump = _dump_database(app)
    assert canary_key not in dump
    assert canary_key[12:] not in dump, "not even the secret part of the key"
    assert national_id not in dump
    assert "whsec_deadbeef" not in dump

    with app.app_context():
        rows = db.session.scalars(select(AuditLog).order_by(AuditLog.id)).all()
    assert len(rows) == 2
    first = rows[0]
    assert first.institution_id == institution.id and first.actor == key.prefix
    # 400: /institution takes no query parameters; the refused request is audited, redacted, all the same.
    assert first.method == "GET" and first.path == "/api/v1/institution" and first.status == 400
    assert first.query == "api_key=[REDACTED]&national_id=[REDACTED]&note=[REDACTED]&token=[REDACTED]&q=[REDACTED]"
    assert first.user_agent == "sync/1.0" and first.request_id and first.duration_ms >= 0
    assert rows[1].status == 401 and rows[1].actor == "anonymous" and rows[1].institution_id is None


def test_audit_rows_hide_every_character_of_a_webhook_secret(app, client, factory):
    _, raw_key = factory.api_key(factory.institution())
    secret = "whsec_ab+c/de=="  # the base64 alphabet of signing secrets ("+" unencoded in a query is a space)
    client.get(f"/api/v1/institution?plain={secret.replace('+', '')}&encoded={quote(secret, safe='')}",
               headers=auth_header(raw_key))
    with app.app_context():
        row = db.session.scalars(select(AuditLog)).one()
    assert row.query == "plain=[REDACTED]&encoded=[REDACTED]"


def test_portal_rows_redact_secret_looking_targets(app, client, factory):
    institution = factory.institution()
    user = factory.user(institution, role="admin")
    sign_in(client, user.email)
    refused_url = "http://hooks.example.org/karibu?token=whsec_deadbeefcafe"  # http is refused: audited as sent
    client.post("/webhooks", data={"url": refused_url, "events": ["decision.sent"],
                                   "csrf_token": csrf_token(client, "/webhooks")})
    with app.app_context():
        row = db.session.scalars(select(AuditLog).where(AuditLog.action == "webhook.save")).one()
    assert row.source == "portal" and row.actor == user.email and row.institution_id == institution.id
    # Webhook URLs are shown and audited with their query values masked (core/webhooks/urls.masked_url).
    assert row.target == "http://hooks.example.org/karibu?token=••••" and row.status == 400
    assert "whsec_deadbeefcafe" not in _dump_database(app)


@pytest.fixture
def sent_decision(app, factory):
    """(institution, decision id, response-link token) of a sent decision an applicant can answer."""
    institution = factory.institution()
    application = factory.application(institution, decision="accepted")
    with app.app_context():
        decision = Decision(institution_id=institution.id, application_id=application.id, status="accepted",
                            sent_at=utcnow())
        db.session.add(decision)
        db.session.commit()
        return institution, decision.id, decision_response_token(decision)


@pytest.mark.parametrize("value_patterns", ["on", "off"])
def test_the_decision_response_token_never_reaches_the_audit_table(app, client, sent_decision, monkeypatch,
                                                                    value_patterns):
    """Redacted because the path parameter is named `token`, not because the value looks like one: with the
    secret-value patterns switched off the token is still masked."""
    if value_patterns == "off":
        monkeypatch.setattr(core.audit.recording, "_SECRET_VALUE", re.compile(r"(?!)"))
    institution, decision_id, token = sent_decision
    page = client.get(f"/decisions/respond/{token}/confirm?response=accepted").get_data(as_text=True)
    answered = client.post(f"/decisions/respond/{token}",
                           data={"response": "accepted", "csrf_token": _CSRF_INPUT.search(page).group(1)})
    assert answered.status_code == 302

    dump = _dump_database(app)
    assert token not in dump
    for part in token.split("."):
        assert part not in dump, "no part of the token either"
    with app.app_context():
        row = db.session.scalars(select(AuditLog).where(AuditLog.source == "public")).one()
    assert (row.institution_id, row.action, row.target, row.status) == (
        institution.id, "decision.respond.accepted", decision_id, 302)
    assert row.path == "/decisions/respond/[REDACTED]"


def test_path_parameters_are_redacted_by_name():
    arguments = {"token": "plain-words", "key_id": "key_123", "reset_token": "abc", "application_id": "app_1"}
    assert redact_path("/decisions/respond/plain-words", "/decisions/respond/<token>", arguments) == \
        "/decisions/respond/[REDACTED]"
    assert redact_path("/x", "/api-keys/<key_id>/revoke/<string:reset_token>/<application_id>", arguments) == \
        "/api-keys/key_123/revoke/[REDACTED]/app_1"
    assert redact_path("/no/route/here", None, None) == "/no/route/here"


def test_the_portal_row_carries_the_response_status_unless_the_action_says_otherwise(app, client, factory):
    institution = factory.institution()
    user = factory.user(institution, role="admin")
    sign_in(client, user.email)
    client.post("/api-keys", data={"name": "sync", "csrf_token": csrf_token(client, "/api-keys")})
    unknown_record = {"issuer": "UNEB", "index_number": "U9999/999", "year": "2019", "level": "UCE"}
    tried = client.post("/try", data={**unknown_record, "csrf_token": csrf_token(client, "/try")})
    assert tried.status_code == 200, "the page itself answers 200 with the registry's 404 in it"
    with app.app_context():
        rows = db.session.execute(select(AuditLog.action, AuditLog.status).where(AuditLog.source == "portal")
                                  .order_by(AuditLog.id)).all()
    assert [tuple(row) for row in rows] == [("login", 302), ("api_key.create", 201), ("verification.try", 404)]


def test_only_the_audit_hook_writes_audit_rows():
    """Every row goes through wsgi.register_audit: no other module calls the writer or inserts rows."""
    writers = []
    for path in [PROJECT_ROOT / "wsgi.py", *PROJECT_ROOT.glob("[acdjp]*/**/*.py")]:
        relative = path.relative_to(PROJECT_ROOT).as_posix()
        if relative.startswith((".venv", "tests/")) or relative == "core/audit/recording.py":
            continue
        tree = ast.parse(path.read_text(), relative)
        for node in ast.walk(tree):
            called = node.func if isinstance(node, ast.Call) else None
            name = getattr(called, "id", None) or getattr(called, "attr", None)
            if name == "record_request" or (name == "insert" and "AuditLog" in ast.unparse(node)):
                writers.append(relative)
    assert writers == ["wsgi.py"]


def test_rate_limited_and_edge_refused_requests_are_audited(app, client, factory, monkeypatch):
    _, raw_key = factory.api_key(factory.institution())
    monkeypatch.setitem(app.config, "API_RATE_LIMIT", "1/minute")
    statuses = [client.get("/api/v1/institution", headers=auth_header(raw_key)).status_code for _ in range(2)]
    monkeypatch.setitem(app.config, "EDGE_SHARED_SECRET", "edge-secret")
    statuses.append(client.get("/api/v1/institution", headers=auth_header(raw_key)).status_code)
    assert statuses == [200, 429, 403]
    with app.app_context():
        rows = db.session.execute(select(AuditLog.status, AuditLog.source, AuditLog.path)
                                  .order_by(AuditLog.id)).all()
    assert [tuple(row) for row in rows] == [(status, "api", "/api/v1/institution") for status in statuses]


def test_audit_survives_a_failed_request(app, client):
    client.get("/api/v1/no-such-thing")
    with app.app_context():
        assert db.session.execute(text("SELECT status FROM audit_log")).scalar_one() == 404


def test_the_audit_write_keeps_odd_values_and_leaves_pooled_connections_durable(app, client, factory):
    """The PostgreSQL write binds values on the client (two statements in one round trip): quotes, backslashes
    and non-ASCII text must arrive intact, and its asynchronous commit must not outlive its own transaction."""
    _, raw_key = factory.api_key(factory.institution())
    agent = "O'Brien \\ \"agent\"; DROP TABLE audit_log; -- Ngũgĩ 東"
    for _ in range(3):
        client.get("/api/v1/institution", headers={**auth_header(raw_key), "User-Agent": agent})
    with app.app_context():
        assert db.session.scalars(select(AuditLog.user_agent)).all() == [agent] * 3
        db.session.remove()
        if db.engine.dialect.name == "postgresql":
            # every connection the pool holds, as the requests (and their audit writes) left them
            connections = [db.engine.connect() for _ in range(db.engine.pool.checkedin())]
            assert connections
            for connection in connections:
                assert connection.execute(text("SHOW synchronous_commit")).scalar_one() == "on"
                assert not connection.connection.driver_connection.autocommit
                connection.close()
