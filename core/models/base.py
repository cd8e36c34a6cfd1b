"""Declarative base, id generation and the clock used by every model."""
from __future__ import annotations

import secrets
import string
from datetime import datetime, timezone

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

_ALPHABET = string.ascii_letters + string.digits
ID_RANDOM_LENGTH = 20

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


# Bytes below 248 (= 4 * 62) map evenly onto the alphabet; the rest are dropped (rejection sampling).
_UNBIASED_LIMIT = 248
_BYTE_TO_BASE62 = bytes(ord(_ALPHABET[value % 62]) if value < _UNBIASED_LIMIT else 0 for value in range(256))
_REJECTED_BYTES = bytes(range(_UNBIASED_LIMIT, 256))


def random_token(length: int) -> str:
    """`length` uniformly random base62 characters from the CSPRNG (fast: the mapping runs in C)."""
    token = b""
    while len(token) < length:
        raw = secrets.token_bytes(length + 8)
        token += raw.translate(_BYTE_TO_BASE62, _REJECTED_BYTES)
    return token[:length].decode()


def new_id(prefix: str) -> str:
    """An opaque, prefixed identifier such as `app_4fQ9…` (about 119 bits of randomness)."""
    return f"{prefix}_{random_token(ID_RANDOM_LENGTH)}"


def utcnow() -> datetime:
    """Naive UTC: every timestamp column stores UTC without a zone, on SQLite and PostgreSQL alike."""
    return datetime.now(timezone.utc).replace(tzinfo=None)
