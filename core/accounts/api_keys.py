"""API keys: `sk_live_` + 32 base62 characters + a 6-character checksum, stored only as a SHA-256 hash."""
from __future__ import annotations

import hashlib
import zlib

from core.db import db
from core.models import ApiKey, utcnow
from core.models.base import random_token
from core.errors import NotFound
from core.scoping import InstitutionScope

LIVE_PREFIX = "sk_live_"
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DISPLAY_PREFIX_LENGTH = 12


def _checksum(body: str) -> str:
    value = zlib.crc32(body.encode())
    digits = []
    for _ in range(6):
        value, remainder = divmod(value, 62)
        digits.append(_BASE62[remainder])
    return "".join(reversed(digits))


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def looks_like_live_key(raw_key: str) -> bool:
    """Cheap structural check (prefix, length, checksum) before any database lookup."""
    if not raw_key.startswith(LIVE_PREFIX) or len(raw_key) != len(LIVE_PREFIX) + 38:
        return False
    body = raw_key[len(LIVE_PREFIX):-6]
    return _checksum(LIVE_PREFIX + body) == raw_key[-6:]


def create_api_key(scope: InstitutionScope, name: str = "") -> tuple[ApiKey, str]:
    """Create a key and return it with the raw secret, which is shown once and never stored."""
    if scope.institution() is None:
        raise NotFound("Institution not found")
    body = LIVE_PREFIX + random_token(32)
    raw_key = body + _checksum(body)
    key = ApiKey(institution_id=scope.institution_id, name=name, prefix=raw_key[:DISPLAY_PREFIX_LENGTH],
                 key_hash=hash_key(raw_key))
    db.session.add(key)
    db.session.commit()
    return key, raw_key


def revoke_api_key(key_id: str, scope: InstitutionScope | None = None) -> ApiKey:
    """Revoke at once. With a `scope`, a key of another institution is reported as missing; without one (the
    operator's CLI) any key can be revoked."""
    key = scope.get(ApiKey, key_id) if scope is not None else db.session.get(ApiKey, key_id)
    if key is None:
        raise NotFound("API key not found")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        db.session.commit()
    return key


def list_api_keys(scope: InstitutionScope) -> list[ApiKey]:
    return list(db.session.scalars(scope.select(ApiKey).order_by(ApiKey.created_at.desc())))
