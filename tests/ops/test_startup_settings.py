"""Start-up settings: no public default SECRET_KEY (forged cookies refused, weak keys stop the app, a generated
key persists) and no OIDC without issuer and audience."""
from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from flask import Flask
from flask.sessions import SecureCookieSessionInterface

from core.config import ConfigurationError
from core.db import db
from core.models import User
from core.secret_key import MIN_SECRET_KEY_LENGTH
from core.accounts.sessions import start_session
from portal.security import SESSION_CLIENT_KEY, SESSION_RECORD_KEY
from tests.conftest import REDIS_URL, app_config
from wsgi import create_app

ROOT = Path(__file__).resolve().parents[2]
OLD_DEFAULT = "dev-insecure-secret-change-me"
STRONG_KEY = "kV3r8-Qm2ZtP9wLx_4NbHs7YcJ1aGf6D"  # as random as a key from secrets.token_urlsafe(24)


ATTACKER_ADDRESS, ATTACKER_AGENT = "203.0.113.7", "attacker-agent/1.0"


def forged_session_cookie(secret_key: str, user_id: str, session_record_id: str) -> str:
    """What an attacker who knows a key mints: Flask's own session serializer, a Flask-Login session.

    The session is bound to a hash of the client's address and User-Agent (portal.security.client_fingerprint),
    both known to the attacker, and names a live server-side session record (as if copied from a real cookie),
    so the forgery carries both.
    """
    attacker = Flask("attacker")
    attacker.secret_key = secret_key
    serializer = SecureCookieSessionInterface().get_signing_serializer(attacker)
    identifier = hashlib.sha512(f"{ATTACKER_ADDRESS}|{ATTACKER_AGENT}".encode()).hexdigest()
    return serializer.dumps({"_user_id": user_id, "_fresh": True, SESSION_CLIENT_KEY: identifier,
                             SESSION_RECORD_KEY: session_record_id})


@pytest.fixture
def app_started_without_secret_key(database_url, tmp_path, monkeypatch):
    """An app started the way a newcomer starts it: no SECRET_KEY anywhere."""
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setenv("SECRET_KEY_FILE", str(tmp_path / "instance" / "secret_key"))
    config = app_config(database_url, tmp_path / "documents")
    del config["SECRET_KEY"]
    return create_app(config)


@pytest.mark.parametrize("key", ["actual", OLD_DEFAULT])
def test_session_cookie_forged_with_the_old_default_key_is_refused(app_started_without_secret_key, factory, key):
    app = app_started_without_secret_key
    client = app.test_client()
    admin = factory.user(factory.institution(), role="admin")
    with app.app_context():
        record_id = start_session(db.session.get(User, admin.id), user_agent=ATTACKER_AGENT,
                                  address=ATTACKER_ADDRESS).id
    signing_key = app.config["SECRET_KEY"] if key == "actual" else key
    client.set_cookie("session", forged_session_cookie(signing_key, admin.id, record_id))
    response = client.get("/dashboard", headers={"User-Agent": ATTACKER_AGENT},
                          environ_overrides={"REMOTE_ADDR": ATTACKER_ADDRESS})
    if key == "actual":  # control: the forgery is well formed, only the key decides
        assert response.status_code == 200
    else:
        assert response.status_code == 302 and "/login" in response.headers["Location"]


def flask_cli(tmp_path: Path, *args: str, **environment: str) -> subprocess.CompletedProcess:
    """`flask --app wsgi …` as an operator runs it, outside the checkout (so no .env is read)."""
    env = {name: value for name, value in os.environ.items() if name != "SECRET_KEY"}
    env.update(PYTHONPATH=str(ROOT), DATABASE_URL=f"sqlite:///{tmp_path / 'karibu.db'}", **environment)
    return subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("weak_key", [OLD_DEFAULT, "change-me-to-64-random-characters-shared-by-all-nodes",
                                      "x" * (MIN_SECRET_KEY_LENGTH - 1), "test-secret-key",
                                      " " * MIN_SECRET_KEY_LENGTH, "a" * MIN_SECRET_KEY_LENGTH, "k" * 64,
                                      "0123456789abcdef" * 2, "Zq8#" * 16, "abcdefghijklmnopqrstuvwxyz012345",
                                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab7"])
def test_the_app_refuses_to_start_with_a_weak_secret_key(tmp_path, weak_key):
    completed = flask_cli(tmp_path, "routes", SECRET_KEY=weak_key)
    assert completed.returncode != 0
    assert "Karibu cannot start: SECRET_KEY" in completed.stderr
    assert "secrets.token_urlsafe(48)" in completed.stderr  # how to make a good one
    assert "Traceback" not in completed.stderr
    if weak_key.strip():
        assert weak_key not in completed.stderr + completed.stdout  # the rejected key is not echoed


def test_a_strong_secret_key_starts(tmp_path):
    completed = flask_cli(tmp_path, "routes", SECRET_KEY=STRONG_KEY, SECRET_KEY_FILE=str(tmp_path / "unused"))
    assert completed.returncode == 0, completed.stderr
    assert not (tmp_path / "unused").exists()


def test_unset_secret_key_is_generated_once_private_and_reused(tmp_path):
    key_file = tmp_path / "instance" / "secret_key"
    first = flask_cli(tmp_path, "routes", SECRET_KEY_FILE=str(key_file))
    assert first.returncode == 0, first.stderr
    assert "set the same SECRET_KEY on every one" in first.stderr
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert len(key) >= MIN_SECRET_KEY_LENGTH
    second = flask_cli(tmp_path, "routes", SECRET_KEY_FILE=str(key_file))
    assert second.returncode == 0, second.stderr
    assert key_file.read_text().strip() == key
    assert [path.name for path in key_file.parent.iterdir()] == ["secret_key"]  # no temporary files left


def test_a_key_file_that_others_may_read_stops_the_app(tmp_path):
    key_file = tmp_path / "instance" / "secret_key"
    assert flask_cli(tmp_path, "routes", SECRET_KEY_FILE=str(key_file)).returncode == 0
    key_file.chmod(0o644)
    completed = flask_cli(tmp_path, "routes", SECRET_KEY_FILE=str(key_file))
    assert completed.returncode != 0
    assert f"Karibu cannot start: the SECRET_KEY file {key_file} may be read by other users (mode 0644)" \
        in completed.stderr
    assert f"chmod 600 {key_file}" in completed.stderr and "Traceback" not in completed.stderr
    key_file.chmod(0o600)
    assert flask_cli(tmp_path, "routes", SECRET_KEY_FILE=str(key_file)).returncode == 0


def test_a_readable_dotenv_is_warned_about_loudly(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"SECRET_KEY={STRONG_KEY}\n")
    dotenv.chmod(0o644)
    completed = flask_cli(tmp_path, "routes")
    assert completed.returncode == 0, completed.stderr
    assert f"SECURITY: {dotenv} may be read by other users (mode 0644)" in completed.stderr
    dotenv.chmod(0o600)
    completed = flask_cli(tmp_path, "routes")
    assert completed.returncode == 0 and "SECURITY" not in completed.stderr


def test_run_sh_writes_a_private_dotenv():
    """scripts/run.sh creates `.env` under umask 077 and makes an existing readable one private."""
    script = (ROOT / "scripts" / "run.sh").read_text()
    creating = next(line for line in script.splitlines() if "> .env" in line)
    assert creating.strip().startswith("(umask 077;")
    assert "chmod 600 .env" in script


def test_settings_come_from_the_environment_over_dotenv_by_any_case(tmp_path, monkeypatch):
    from core.config import Settings
    (tmp_path / ".env").write_text("MAIL_PORT=2525\nmail_use_tls=true\nLOG_LEVEL=DEBUG\nNOT_A_SETTING=1\n"
                                   "SMS_SENDER_ID=Karibu Ünï\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("log_level", "WARNING")
    monkeypatch.setenv("API_CREDENTIAL_CACHE_SECONDS", "0.25")
    settings = Settings.from_environment()
    assert (settings.MAIL_PORT, settings.MAIL_USE_TLS, settings.LOG_LEVEL) == (2525, True, "WARNING")
    assert settings.API_CREDENTIAL_CACHE_SECONDS == 0.25 and settings.SMS_SENDER_ID == "Karibu Ünï"
    assert settings.MAIL_USE_SSL is False  # untouched: the default


@pytest.mark.parametrize(("name", "value"), [("MAIL_PORT", "twenty-five"), ("EVENTS_RETENTION_DAYS", "7"),
                                             ("METRICS_ENABLED", "perhaps")])
def test_a_malformed_setting_stops_the_app_naming_it(tmp_path, name, value):
    completed = flask_cli(tmp_path, "routes", SECRET_KEY=STRONG_KEY, **{name: value})
    assert completed.returncode != 0
    assert f"Karibu cannot start: {name}: " in completed.stderr
    assert "Traceback" not in completed.stderr


def test_the_apps_settings_are_its_overrides_and_follow_its_config(app, monkeypatch):
    from pydantic import ValidationError

    from core.config import settings
    with app.app_context():
        assert settings().REDIS_URL == REDIS_URL  # create_app's override
        assert settings().API_RATE_LIMIT == "100000/minute"
        monkeypatch.setitem(app.config, "MAIL_PORT", "2525")
        assert settings().MAIL_PORT == 2525 == app.config["MAIL_PORT"]  # converted like an environment value
        with pytest.raises(ValidationError):
            app.config["MAIL_PORT"] = "twenty-five"
        assert settings().MAIL_PORT == 2525


def test_a_malformed_override_stops_create_app_naming_it(database_url, tmp_path):
    with pytest.raises(ConfigurationError, match="^EVENTS_RETENTION_DAYS: "):
        create_app({**app_config(database_url, tmp_path / "documents"), "EVENTS_RETENTION_DAYS": 7})


def test_the_default_key_file_is_in_the_instance_folder():
    from core.config import INSTANCE_DIR, Settings
    assert Settings.model_fields["SECRET_KEY"].default == ""
    assert Path(Settings.model_fields["SECRET_KEY_FILE"].default) == INSTANCE_DIR / "secret_key"


@pytest.mark.parametrize("missing", [("OIDC_ISSUER",), ("OIDC_AUDIENCE",), ("OIDC_ISSUER", "OIDC_AUDIENCE")])
def test_oidc_without_issuer_or_audience_refuses_to_start(tmp_path, missing):
    settings = {"OIDC_JWKS_URL": "https://idp.example.ac.rw/jwks", "OIDC_ISSUER": "https://idp.example.ac.rw",
                "OIDC_AUDIENCE": "karibu-api"}
    settings.update({name: "" for name in missing})
    completed = flask_cli(tmp_path, "routes", SECRET_KEY=STRONG_KEY, **settings)
    assert completed.returncode != 0
    assert "Karibu cannot start: OIDC is enabled" in completed.stderr
    assert all(name in completed.stderr for name in missing)
    assert "Traceback" not in completed.stderr


def test_an_unwritable_key_file_stops_the_app_with_a_clear_message(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the instance folder should be")
    completed = flask_cli(tmp_path, "routes", SECRET_KEY_FILE=str(blocker / "secret_key"))
    assert completed.returncode != 0
    assert "Karibu cannot start: SECRET_KEY is not set" in completed.stderr and "SECRET_KEY_FILE" in completed.stderr
    assert "Traceback" not in completed.stderr
