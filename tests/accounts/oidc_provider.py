"""A real OpenID Connect provider for the tests, built on Authlib's server side (the authorization code grant with
PKCE and the OpenID Connect `openid` extension), served over HTTPS on a free loopback port with a trustme
certificate.

It serves discovery and a JWKS, signs ID tokens with a real RSA (RS256) or EC (ES256) key, and answers every
authorization request at once for the person named by `login_hint` (or `identity`), as a university's sign-in
page would after the person typed their password. Tests steer it: `rotate_key()` publishes a new key and drops
the old one, `claim_changes` alters (or, with None, removes) claims of the ID tokens it issues, `sign_with_unpublished_key`
signs with a key its JWKS does not hold, `signing_algorithm` signs with another algorithm, `discovery_issuer` names
another issuer in its discovery document, `deny` answers `error=access_denied`.
"""
from __future__ import annotations

import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import OpenIDCode
from authlib.oidc.core.models import AuthorizationCodeMixin
from flask import Flask, jsonify, request
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey
from werkzeug.serving import make_server


@dataclass
class Client(ClientMixin):
    client_id: str
    client_secret: str
    redirect_uris: list[str]

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope):
        return " ".join(item for item in (scope or "").split() if item in {"openid", "email", "profile"})

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret):
        return client_secret == self.client_secret

    def check_endpoint_auth_method(self, method, endpoint):
        return method == "client_secret_basic" if endpoint == "token" else True

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type == "authorization_code"


@dataclass
class Person:
    email: str
    claims: dict = field(default_factory=dict)


@dataclass
class Code(AuthorizationCodeMixin):
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    person: Person
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    issued_at: float = field(default_factory=time.time)

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_nonce(self):
        return self.nonce

    def get_auth_time(self):
        return int(self.issued_at)


class TestProvider:
    """One provider (issuer) with one registered client (Karibu)."""

    def __init__(self, server_certificate, client_id: str, client_secret: str, algorithm: str = "RS256"):
        self.algorithm = algorithm
        self.client = Client(client_id, client_secret, [])
        self.codes: dict[str, Code] = {}
        self.keys = [self._new_key()]
        self.claim_changes: dict = {}
        self.sign_with_unpublished_key = False
        self.signing_algorithm: str | None = None
        self.discovery_issuer: str | None = None
        self.identity: Person | None = None
        self.deny = False
        self.token_requests = 0
        self.jwks_requests = 0
        self.app = self._make_app()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_certificate.configure_cert(context)
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True, ssl_context=context)
        self.issuer = f"https://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _new_key(self):
        kid = uuid.uuid4().hex[:12]
        if self.algorithm == "ES256":
            return ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256", "use": "sig"})
        return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"})

    # --- what tests steer ----------------------------------------------------------------------------------

    def allow_redirect_uri(self, uri: str) -> None:
        if uri not in self.client.redirect_uris:
            self.client.redirect_uris.append(uri)

    def rotate_key(self) -> None:
        """A new signing key, published alone: tokens signed with it carry a `kid` Karibu has not seen."""
        self.keys = [self._new_key()]

    def reset(self) -> None:
        self.claim_changes, self.sign_with_unpublished_key, self.identity, self.deny = {}, False, None, False
        self.signing_algorithm = self.discovery_issuer = None

    def start(self) -> "TestProvider":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    # --- the ID token --------------------------------------------------------------------------------------

    def id_token(self, code: Code, access_token: str) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": "sub-" + code.person.email, "aud": code.client_id, "iat": now,
                  "exp": now + 300, "auth_time": code.get_auth_time(), "email": code.person.email,
                  "email_verified": True, "name": code.person.email.split("@")[0].title(),
                  "amr": ["pwd", "mfa"], "acr": "urn:test:mfa"}
        if code.nonce:
            claims["nonce"] = code.nonce
        claims.update(code.person.claims)
        for name, value in self.claim_changes.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        key = self._new_key() if self.sign_with_unpublished_key else self.keys[0]
        algorithm = self.signing_algorithm or self.algorithm
        if algorithm != self.algorithm:  # the same key material, free of its published `alg`
            key = type(key).import_key({name: value for name, value in key.as_dict(private=True).items()
                                        if name != "alg"}, parameters={"kid": key.kid})
        return jwt.encode({"alg": algorithm, "kid": key.kid}, claims, key, algorithms=[algorithm])

    # --- the Flask app -------------------------------------------------------------------------------------

    def _make_app(self) -> Flask:
        provider = self
        app = Flask(f"test-provider-{uuid.uuid4().hex[:6]}")
        app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": 300}

        class CodeGrant(AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]

            def save_authorization_code(self, code, request):
                data = request.payload.data
                provider.codes[code] = Code(
                    code=code, client_id=request.client.client_id, redirect_uri=request.payload.redirect_uri,
                    scope=request.payload.scope, person=request.user, nonce=data.get("nonce"),
                    code_challenge=data.get("code_challenge"), code_challenge_method=data.get("code_challenge_method"))

            def query_authorization_code(self, code, client):
                found = provider.codes.get(code)
                return found if found is not None and found.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code):
                provider.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code):
                return authorization_code.person

        class OpenIDExtension(OpenIDCode):
            def exists_nonce(self, nonce, request):
                return any(code.nonce == nonce for code in provider.codes.values())

            def encode_id_token(self, token, request):
                return provider.id_token(request.authorization_code, token.get("access_token", ""))

            def generate_user_info(self, user, scope):  # the ID token carries every claim
                return {}

        server = AuthorizationServer(app, query_client=lambda client_id: (
            provider.client if client_id == provider.client.client_id else None), save_token=lambda token, req: None)
        server.register_grant(CodeGrant, [CodeChallenge(required=True), OpenIDExtension(require_nonce=True)])

        @app.get("/.well-known/openid-configuration")
        def discovery():
            return jsonify({
                "issuer": provider.discovery_issuer or provider.issuer, "authorization_endpoint": provider.issuer + "/authorize",
                "token_endpoint": provider.issuer + "/token", "jwks_uri": provider.issuer + "/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": [provider.algorithm],
                "code_challenge_methods_supported": ["S256"], "scopes_supported": ["openid", "email", "profile"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            })

        @app.get("/favicon.ico")
        def favicon():  # browsers ask for one; a 404 would be a console error in the browser tests
            return "", 204

        @app.get("/jwks")
        def jwks():
            provider.jwks_requests += 1
            return jsonify(KeySet(provider.keys).as_dict(private=False))

        @app.get("/authorize")
        def authorize():
            if provider.deny:
                from urllib.parse import urlencode
                return "", 302, {"Location": request.args["redirect_uri"] + "?" + urlencode(
                    {"error": "access_denied", "error_description": "The person declined",
                     "state": request.args.get("state", "")})}
            person = provider.identity or Person(request.args.get("login_hint", "nobody@example.org"))
            return server.create_authorization_response(grant_user=person)

        @app.post("/token")
        def token():
            provider.token_requests += 1
            return server.create_token_response()

        return app
