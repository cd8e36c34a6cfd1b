"""Authentication of `/api/v1` callers: live keys, the public trial key and OIDC bearer tokens.

`authenticate()` is the only place a credential is turned into a `Principal`. The institution check lives
here too, so a key of a disabled or deleted institution gets the same 404 on every endpoint.
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import jwt
from sqlalchemy import select, update

from core.errors import NotAuthenticated, NotFound
from core.extensions import db
from core.keys import hash_key, looks_like_live_key
from core.models import ApiKey, Institution, utcnow

PrincipalKind = Literal["live_key", "trial", "oidc"]
LAST_USED_RESOLUTION_SECONDS = 60


@dataclass(frozen=True)
class Principal:
    kind: PrincipalKind
    institution_id: str | None
    key_id: str | None
    actor: str
    # Stable identity of the credential itself, for per-credential rate limits: `key:<key id>` or
    # `oidc:<hash of issuer and subject>`; None for the trial key (limited per client address instead).
    credential_id: str | None = None

    @property
    def is_trial(self) -> bool:
        return self.kind == "trial"


@dataclass(frozen=True)
class AuthSettings:
    trial_api_key: str
    oidc_issuer: str = ""
    oidc_audience: str = ""
    oidc_jwks_url: str = ""
    oidc_institution_claim: str = "institution_id"

    @property
    def oidc_enabled(self) -> bool:
        """Identity tokens are checked only with a key set, an issuer and an audience (the app refuses to start
        with a key set alone: core.config.check_startup_settings)."""
        return bool(self.oidc_jwks_url and self.oidc_issuer and self.oidc_audience)

    @classmethod
    def from_config(cls, config) -> "AuthSettings":
        return cls(
            trial_api_key=config["TRIAL_API_KEY"],
            oidc_issuer=config["OIDC_ISSUER"],
            oidc_audience=config["OIDC_AUDIENCE"],
            oidc_jwks_url=config["OIDC_JWKS_URL"],
            oidc_institution_claim=config["OIDC_INSTITUTION_CLAIM"],
        )


MISSING_CREDENTIALS = "Missing API key: send the header 'Authorization: Bearer <API key>'"
INVALID_CREDENTIALS = "Invalid API key"


def authorization_token(authorization_header: str | None, scheme: str = "Bearer") -> str | None:
    """The token of `<scheme> <token>`: scheme compared case-insensitively, any whitespace around and between.

    None when the header is missing, names another scheme or has no token. The one parser of Authorization
    headers (the API and the bundled registry simulator use it).
    """
    parts = (authorization_header or "").split(None, 1)
    if len(parts) != 2 or parts[0].casefold() != scheme.casefold():
        return None
    return parts[1].strip() or None


def bearer_token(authorization_header: str | None) -> str:
    if not (authorization_header or "").strip():
        raise NotAuthenticated(MISSING_CREDENTIALS)
    token = authorization_token(authorization_header, "Bearer")
    if token is None:
        raise NotAuthenticated("Malformed Authorization header: expected 'Bearer <API key>'")
    return token


def authenticate(authorization_header: str | None, settings: AuthSettings) -> Principal:
    token = bearer_token(authorization_header)
    if hmac.compare_digest(token.encode(), settings.trial_api_key.encode()):
        return Principal(kind="trial", institution_id=None, key_id=None, actor="trial")
    if token.startswith("sk_"):
        return _authenticate_live_key(token)
    if token.count(".") == 2 and settings.oidc_enabled:
        return _authenticate_oidc(token, settings)
    raise NotAuthenticated(INVALID_CREDENTIALS)


def _authenticate_live_key(raw_key: str) -> Principal:
    if not looks_like_live_key(raw_key):
        raise NotAuthenticated(INVALID_CREDENTIALS)
    key = db.session.scalars(select(ApiKey).where(ApiKey.key_hash == hash_key(raw_key))).one_or_none()
    if key is None:
        raise NotAuthenticated(INVALID_CREDENTIALS)
    if key.revoked_at is not None:
        raise NotAuthenticated("API key has been revoked")
    _require_active_institution(key.institution_id)
    _touch_last_used(key)
    return Principal(kind="live_key", institution_id=key.institution_id, key_id=key.id, actor=key.prefix,
                     credential_id=f"key:{key.id}")


def _touch_last_used(key: ApiKey) -> None:
    """Record use at most once a minute per key, so hot keys do not write on every request."""
    now = utcnow()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() >= LAST_USED_RESOLUTION_SECONDS:
        db.session.execute(update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=now))
        db.session.commit()


@lru_cache(maxsize=8)
def _jwks_client(jwks_url: str) -> jwt.PyJWKClient:
    return jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300, timeout=5)


def _authenticate_oidc(token: str, settings: AuthSettings) -> Principal:
    try:
        signing_key = _jwks_client(settings.oidc_jwks_url).get_signing_key_from_jwt(token)
        claims = jwt.decode(
            token,
            signing_key.key,
            algorithms=["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"],
            audience=settings.oidc_audience,
            issuer=settings.oidc_issuer,
            options={"require": ["exp", "iss", "aud"]},
        )
    except jwt.ExpiredSignatureError:
        raise NotAuthenticated("Identity token has expired") from None
    except (jwt.PyJWTError, jwt.PyJWKClientError):
        raise NotAuthenticated("Invalid identity token") from None
    institution_id = claims.get(settings.oidc_institution_claim)
    if not isinstance(institution_id, str) or not institution_id:
        raise NotAuthenticated(f"Identity token has no '{settings.oidc_institution_claim}' claim")
    _require_active_institution(institution_id)
    subject = str(claims.get("sub", "unknown"))
    identity = hashlib.sha256(f"{claims.get('iss', '')}\0{subject}".encode()).hexdigest()[:32]
    return Principal(kind="oidc", institution_id=institution_id, key_id=None, actor=f"oidc:{subject[:80]}",
                     credential_id=f"oidc:{identity}")


def _require_active_institution(institution_id: str) -> None:
    institution = db.session.get(Institution, institution_id)
    if institution is None or not institution.is_active:
        raise NotFound("Institution not found")
