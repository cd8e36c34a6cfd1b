"""Argon2id password hashing."""
from __future__ import annotations

from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


@cache
def _equaliser_hash() -> str:
    """Made on first use, not at import: one argon2 hash costs 64 MiB of memory, which every web worker
    would otherwise hold from the start."""
    return hash_password("karibu-timing-equaliser")


def verify_against_nothing(password: str) -> None:
    """Spend the time of a real check, so an unknown email costs as much as a wrong password."""
    verify_password(_equaliser_hash(), password)
