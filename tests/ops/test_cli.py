import json

from sqlalchemy import func, select, text

import devtools.seed

from core.db import db
from core.models import ApiKey, Application, Document, Institution, User


def run_json(app, *args) -> dict:
    result = app.test_cli_runner().invoke(args=[*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_seed_demo_prints_the_documented_json_and_is_idempotent(app, client):
    first = run_json(app, "seed-demo", "--applications", "25")
    assert set(first) == {"institution_id", "api_key", "staff_email", "staff_password", "trial_api_key"}
    assert first["api_key"].startswith("sk_live_")
    assert first["trial_api_key"] == "sk_trial_demo"

    second = run_json(app, "seed-demo", "--applications", "25")
    assert second["institution_id"] == first["institution_id"]
    assert second["api_key"] != first["api_key"], "each run makes a new key"
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Institution)) == 1
        assert db.session.scalar(select(func.count()).select_from(Application)) == 25
        assert db.session.scalar(select(func.count()).select_from(User)) == 1
        assert db.session.scalar(select(func.count()).select_from(ApiKey)) == 2
        documents = db.session.scalars(select(Document)).all()
    assert documents and all(doc.content_type == "application/pdf" for doc in documents)

    # Both keys work, and the demo admin's printed password is real.
    for key in (first["api_key"], second["api_key"]):
        response = client.get("/api/v1/institution", headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200
        assert response.json["institution"]["name"] == "Demo University"


def test_seed_demo_documents_are_real_pdfs(app):
    run_json(app, "seed-demo", "--applications", "3")
    from core.applications.documents import DocumentStorage
    with app.app_context():
        document = db.session.scalars(select(Document)).first()
        storage = DocumentStorage(app.config["DOCUMENT_STORAGE_DIR"])
        data = storage.path(document.sha256).read_bytes()
    assert data.startswith(b"%PDF-1.4") and data.rstrip().endswith(b"%%EOF")
    assert len(data) == document.size


def test_institutions_keys_and_users_commands(app, client):
    institution_id = run_json(app, "institutions", "create", "University of Rwanda")["institution_id"]
    assert institution_id.startswith("ins_")

    created = run_json(app, "api-keys", "create", "--institution", institution_id, "--name", "sis-sync")
    assert set(created) == {"key_id", "api_key"}
    headers = {"Authorization": f"Bearer {created['api_key']}"}
    assert client.get("/api/v1/institution", headers=headers).status_code == 200

    revoked = app.test_cli_runner().invoke(args=["api-keys", "revoke", created["key_id"]])
    assert revoked.exit_code == 0, revoked.output
    response = client.get("/api/v1/institution", headers=headers)
    assert response.status_code == 401 and response.json["error"] == "API key has been revoked"

    user = run_json(app, "users", "create", "--institution", institution_id, "--email", "Registrar@UR.ac.rw",
                    "--password", "long-enough-password", "--role", "admin")
    assert set(user) == {"user_id"}
    with app.app_context():
        stored = db.session.get(User, user["user_id"])
        assert stored.email == "registrar@ur.ac.rw" and stored.role == "admin"
        assert stored.password_hash.startswith("$argon2id$") and "long-enough" not in stored.password_hash


def test_cli_errors_are_one_line_messages(app):
    result = app.test_cli_runner().invoke(args=["api-keys", "create", "--institution", "ins_missing"])
    assert result.exit_code == 1
    assert "Institution not found" in result.output and "Traceback" not in result.output
    result = app.test_cli_runner().invoke(args=["api-keys", "revoke", "key_missing"])
    assert result.exit_code == 1 and "API key not found" in result.output


def test_large_seed_keeps_every_index(app, client, monkeypatch):
    """Large loads drop and rebuild the secondary indexes on PostgreSQL; on every database, all of them
    (the migration-made trigram index included) must be there afterwards and search must work."""
    with app.app_context():
        if db.engine.dialect.name == "postgresql":
            list_indexes = text("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
        else:
            list_indexes = text("SELECT name FROM sqlite_master WHERE type = 'index'")
        before = set(db.session.scalars(list_indexes))
        db.session.remove()
    monkeypatch.setattr(devtools.seed, "REBUILD_INDEXES_FROM", 1)
    seeded = run_json(app, "seed-demo", "--applications", "30")
    with app.app_context():
        assert set(db.session.scalars(list_indexes)) == before
        assert db.session.scalar(select(func.count()).select_from(Application)) == 30
    response = client.get("/api/v1/applications/search?q=a", headers={"Authorization": f"Bearer {seeded['api_key']}"})
    assert response.status_code == 200 and response.json["data"]
