"""Authentication of `/api/v1` callers (live keys, the public trial key, OIDC bearer tokens) into a `Principal`.

The credential cache and its revocation bound: docs/architecture.md (request path), docs/design-notes.md.
"""
from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Literal

from sqlalchemy import event, select, update
from sqlalchemy.orm import Session

from core.config import Settings, settings
from core.errors import NotAuthenticated, NotFound
from core.db import db
from core.accounts.api_keys import hash_key, is_test_key, looks_like_live_key
from core.models import ApiKey, Institution, utcnow
from core.models.identity import INSTITUTION_ACTIVE

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
    # False for a test key (`sk_test_`): the caller works in the institution's sandbox.
    livemode: bool = True

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
    def from_config(cls, config: Settings) -> "AuthSettings":
        return cls(
            trial_api_key=config.TRIAL_API_KEY,
            oidc_issuer=config.OIDC_ISSUER,
            oidc_audience=config.OIDC_AUDIENCE,
            oidc_jwks_url=config.OIDC_JWKS_URL,
            oidc_institution_claim=config.OIDC_INSTITUTION_CLAIM,
        )


MISSING_CREDENTIALS = "Missing API key: send the header 'Authorization: Bearer <API key>'"
INVALID_CREDENTIALS = "Invalid API key"


def authorization_token(authorization_header: str | None, scheme: str = "Bearer") -> str | None:
    """The token of an `Authorization: <scheme> <token>` header (scheme case-insensitive), or None when absent."""
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


@dataclass(frozen=True)
class _KeyRecord:
    """The columns of an API key that authentication needs, with its institution's standing."""
    id: str
    institution_id: str
    prefix: str
    revoked: bool
    institution_active: bool
    last_used_at: datetime | None


class _CredentialCache:
    """Key hash → `_KeyRecord`, institution id → active, kept `API_CREDENTIAL_CACHE_SECONDS`; unknown keys not kept."""

    MAX_ENTRIES = 10_000

    def __init__(self):
        self.keys: dict[str, tuple[float, _KeyRecord]] = {}
        self.institutions: dict[str, tuple[float, bool]] = {}

    @staticmethod
    def lifetime() -> float:
        return min(settings().API_CREDENTIAL_CACHE_SECONDS, MAX_CREDENTIAL_CACHE_SECONDS)

    def get(self, table: dict, name: str):
        entry = table.get(name)
        if entry is None or entry[0] <= time.monotonic():
            return None
        return entry[1]

    def put(self, table: dict, name: str, value, lifetime: float) -> None:
        if lifetime <= 0:
            return
        if len(table) >= self.MAX_ENTRIES:
            table.clear()
        table[name] = (time.monotonic() + lifetime, value)

    def clear(self) -> None:
        self.keys.clear()
        self.institutions.clear()


MAX_CREDENTIAL_CACHE_SECONDS = 1.0
_cache = _CredentialCache()


@event.listens_for(Session, "after_flush")
def _note_credential_changes(session, _flush_context) -> None:
    changed = (*session.new, *session.dirty, *session.deleted)
    if any(isinstance(instance, (ApiKey, Institution)) for instance in changed):
        session.info["karibu_credentials_changed"] = True


@event.listens_for(Session, "after_commit")
def _forget_changed_credentials(session) -> None:
    """A revocation or an institution's change made in this process is seen at once here (others: TTL)."""
    if session.info.pop("karibu_credentials_changed", False):
        _cache.clear()


@event.listens_for(Session, "after_rollback")
def _drop_change_note(session) -> None:
    session.info.pop("karibu_credentials_changed", None)


def _key_record(key_hash: str) -> _KeyRecord | None:
    """The key with this hash and its institution's standing: from the cache, else one query."""
    record = _cache.get(_cache.keys, key_hash)
    if record is not None:
        return record
    lifetime = _cache.lifetime()
    row = db.session.execute(
        select(ApiKey.id, ApiKey.institution_id, ApiKey.prefix, ApiKey.revoked_at, ApiKey.last_used_at,
               Institution.status, Institution.deleted_at)
        .outerjoin(Institution, Institution.id == ApiKey.institution_id)
        .where(ApiKey.key_hash == key_hash)).one_or_none()
    if row is None:
        return None
    record = _KeyRecord(id=row.id, institution_id=row.institution_id, prefix=row.prefix,
                        revoked=row.revoked_at is not None,
                        institution_active=_is_active(row.status, row.deleted_at),
                        last_used_at=row.last_used_at)
    _cache.put(_cache.keys, key_hash, record, lifetime)
    return record


def _is_active(status: str | None, deleted_at: datetime | None) -> bool:
    """`Institution.is_active` from its two columns."""
    return status == INSTITUTION_ACTIVE and deleted_at is None


def _authenticate_live_key(raw_key: str) -> Principal:
    if not looks_like_live_key(raw_key):
        raise NotAuthenticated(INVALID_CREDENTIALS)
    key_hash = hash_key(raw_key)
    key = _key_record(key_hash)
    if key is None:
        raise NotAuthenticated(INVALID_CREDENTIALS)
    if key.revoked:
        raise NotAuthenticated("API key has been revoked")
    if not key.institution_active:
        raise NotFound("Institution not found")
    _touch_last_used(key_hash, key)
    return Principal(kind="live_key", institution_id=key.institution_id, key_id=key.id, actor=key.prefix,
                     credential_id=f"key:{key.id}", livemode=not is_test_key(key.prefix))


def _touch_last_used(key_hash: str, key: _KeyRecord) -> None:
    """Record use at most once a minute per key, so hot keys do not write on every request."""
    now = utcnow()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() >= LAST_USED_RESOLUTION_SECONDS:
        db.session.execute(update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=now))
        db.session.commit()
        cached = _cache.keys.get(key_hash)
        if cached is not None and cached[1].id == key.id:
            _cache.keys[key_hash] = (cached[0], _KeyRecord(**{**key.__dict__, "last_used_at": now}))


@lru_cache(maxsize=8)
def _jwks_client(jwks_url: str) -> "jwt.PyJWKClient":
    import jwt  # heavy with `cryptography`: imported only where identity tokens are enabled

    return jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300, timeout=5)


def _authenticate_oidc(token: str, settings: AuthSettings) -> Principal:
    import jwt

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
    active = _cache.get(_cache.institutions, institution_id)
    if active is None:
        lifetime = _cache.lifetime()
        row = db.session.execute(select(Institution.status, Institution.deleted_at)
                                 .where(Institution.id == institution_id)).one_or_none()
        active = row is not None and _is_active(row.status, row.deleted_at)
        _cache.put(_cache.institutions, institution_id, active, lifetime)
    if not active:
        raise NotFound("Institution not found")
