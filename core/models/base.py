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


def random_token(length: int) -> str:
    """`length` uniformly random base62 characters (one CSPRNG read, no per-character calls)."""
    number = int.from_bytes(secrets.token_bytes(length), "big")
    characters = []
    for _ in range(length):
        number, remainder = divmod(number, 62)
        characters.append(_ALPHABET[remainder])
    return "".join(characters)


def new_id(prefix: str) -> str:
    """An opaque, prefixed identifier such as `app_4fQ9…` (about 119 bits of randomness)."""
    return f"{prefix}_{random_token(ID_RANDOM_LENGTH)}"


def utcnow() -> datetime:
    """Naive UTC: every timestamp column stores UTC without a zone, on SQLite and PostgreSQL alike."""
    return datetime.now(timezone.utc).replace(tzinfo=None)
