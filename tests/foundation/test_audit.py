from sqlalchemy import MetaData, select, text

from core.audit import record_portal_action
from core.extensions import db
from core.models import AuditLog
from tests.conftest import auth_header


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


def test_portal_action_helper_redacts_too(app, factory):
    institution = factory.institution()
    user = factory.user(institution, role="admin")
    with app.app_context():
        record_portal_action(user, "api_key.created", "key sk_live_ABCDEF1234567890", status=201,
                             path="/keys", method="POST")
        row = db.session.scalars(select(AuditLog)).one()
    assert row.source == "portal" and row.actor == user.email and row.institution_id == institution.id
    assert "sk_live_" not in row.target and "[REDACTED]" in row.target


def test_audit_survives_a_failed_request(app, client):
    client.get("/api/v1/no-such-thing")
    with app.app_context():
        assert db.session.execute(text("SELECT status FROM audit_log")).scalar_one() == 404
