"""API keys: `sk_live_` (or `sk_test_`, test mode: the institution's sandbox) + 32 base62 characters + a 6-character
checksum, stored only as a SHA-256 hash."""
from __future__ import annotations

import hashlib
import zlib

from core.db import db
from core.models import ApiKey, utcnow
from core.models.base import random_token
from core.errors import NotFound
from core.scoping import InstitutionScope

LIVE_PREFIX = "sk_live_"
TEST_PREFIX = "sk_test_"
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
    """Cheap structural check (prefix, length, checksum) before any database lookup; test keys pass too."""
    prefix = raw_key[:len(LIVE_PREFIX)]
    if prefix not in (LIVE_PREFIX, TEST_PREFIX) or len(raw_key) != len(LIVE_PREFIX) + 38:
        return False
    return _checksum(raw_key[:-6]) == raw_key[-6:]


def is_test_key(prefix: str) -> bool:
    """Whether a key (or its displayed prefix) is a test-mode key."""
    return prefix.startswith(TEST_PREFIX)


def create_api_key(scope: InstitutionScope, name: str = "", test: bool = False) -> tuple[ApiKey, str]:
    """Create a key (with `test`, a test-mode key) and return it with the raw secret, shown once and never stored."""
    institution = scope.institution()
    if institution is None or institution.is_sandbox:
        raise NotFound("Institution not found")
    body = (TEST_PREFIX if test else LIVE_PREFIX) + random_token(32)
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
