import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from core.db import db
from core.models import Institution
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms


def test_live_key_reaches_its_institution(client, factory):
    institution = factory.institution("Kampala International University")
    key, raw_key = factory.api_key(institution)
    response = client.get("/api/v1/institution", headers=auth_header(raw_key))
    assert response.status_code == 200
    assert response.json["institution"]["id"] == institution.id
    assert response.json["credential"] == {"kind": "live_key", "key_id": key.id, "actor": raw_key[:12]}
    assert [stage["id"] for stage in response.json["institution"]["stages"]][0] == "submitted"
    assert_conforms(response)


@pytest.mark.parametrize("header, message", [
    (None, "Missing API key"),
    ("", "Missing API key"),
    ("Bearer", "Malformed Authorization header"),
    ("Basic dXNlcjpwYXNz", "Malformed Authorization header"),
    ("Bearer sk_live_notarealkeyatall", "Invalid API key"),
    ("Bearer sk_live_" + "A" * 38, "Invalid API key"),
    ("Bearer garbage-value", "Invalid API key"),
    ("Bearer a.b.c", "Invalid API key"),
])
def test_missing_or_garbage_credentials_get_401(client, header, message):
    headers = {} if header is None else {"Authorization": header}
    response = client.get("/api/v1/institution", headers=headers)
    assert response.status_code == 401
    assert response.json["code"] == 401 and response.json["error"].startswith(message)
    assert_conforms(response)


def test_a_well_formed_key_that_was_never_issued_is_401(client, factory):
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    forged = raw_key[:-7] + ("x" if raw_key[-7] != "x" else "y") + raw_key[-6:]
    assert client.get("/api/v1/institution", headers=auth_header(forged)).status_code == 401


def test_trial_key_is_refused_outside_verification(client):
    response = client.get("/api/v1/institution", headers=auth_header("sk_trial_demo"))
    assert response.status_code == 401
    assert "trial API key only grants access to record verification" in response.json["error"]


def test_disabled_or_deleted_institution_is_not_found(app, client, factory):
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    with app.app_context():
        db.session.get(Institution, institution.id).status = "disabled"
        db.session.commit()
    response = client.get("/api/v1/institution", headers=auth_header(raw_key))
    assert response.status_code == 404 and response.json == {"code": 404, "error": "Institution not found", "errors": []}
    with app.app_context():
        row = db.session.get(Institution, institution.id)
        row.status, row.deleted_at = "active", row.created_at
        db.session.commit()
    assert client.get("/api/v1/institution", headers=auth_header(raw_key)).status_code == 404


class _JwksServer:
    """A local JWKS endpoint serving a freshly generated RSA key set."""

    def __init__(self):
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private_key.public_key()))
        jwk.update({"kid": "test-key-1", "use": "sig", "alg": "RS256"})
        body = json.dumps({"keys": [jwk]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, private_key=None, **claims) -> str:
        now = int(time.time())
        payload = {"iss": "https://idp.example.ac.rw", "aud": "karibu-api", "sub": "sis-sync", "iat": now,
                   "exp": now + 300, **claims}
        return jwt.encode(payload, private_key or self.private_key, algorithm="RS256",
                          headers={"kid": "test-key-1"})


@pytest.fixture
def oidc(app, monkeypatch):
    server = _JwksServer()
    monkeypatch.setitem(app.config, "OIDC_ISSUER", "https://idp.example.ac.rw")
    monkeypatch.setitem(app.config, "OIDC_AUDIENCE", "karibu-api")
    monkeypatch.setitem(app.config, "OIDC_JWKS_URL", server.url)
    yield server
    server.server.shutdown()


def test_oidc_token_is_accepted_for_its_institution(client, factory, oidc):
    institution = factory.institution()
    response = client.get("/api/v1/institution",
                          headers=auth_header(oidc.token(institution_id=institution.id)))
    assert response.status_code == 200
    assert response.json["credential"] == {"kind": "oidc", "key_id": None, "actor": "oidc:sis-sync"}
    assert response.json["institution"]["id"] == institution.id


@pytest.mark.parametrize("claims, message", [
    ({"exp": int(time.time()) - 60}, "Identity token has expired"),
    ({"aud": "someone-else"}, "Invalid identity token"),
    ({"iss": "https://evil.example"}, "Invalid identity token"),
    ({"institution_id": None}, "Identity token has no 'institution_id' claim"),
])
def test_bad_oidc_tokens_get_401(client, factory, oidc, claims, message):
    institution = factory.institution()
    token = oidc.token(**{"institution_id": institution.id, **claims})
    response = client.get("/api/v1/institution", headers=auth_header(token))
    assert response.status_code == 401 and response.json["error"] == message


def test_oidc_token_signed_by_another_key_is_401(client, factory, oidc):
    institution = factory.institution()
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = oidc.token(private_key=stranger, institution_id=institution.id)
    assert client.get("/api/v1/institution", headers=auth_header(token)).status_code == 401


def test_oidc_token_for_unknown_institution_is_404(client, oidc):
    response = client.get("/api/v1/institution", headers=auth_header(oidc.token(institution_id="ins_nope")))
    assert response.status_code == 404 and response.json["error"] == "Institution not found"
