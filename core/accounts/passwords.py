"""Argon2id password hashing and the rules a new staff password must follow."""
from __future__ import annotations

from functools import cache

from argon2 import PasswordHasher
from flask_babel import gettext as _
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


MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 200


@cache
def _common_passwords() -> frozenset[str]:
    """The 30,000 most common passwords of zxcvbn's list (drawn from leaked password sets), lowercased."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS
    return frozenset(word.lower() for word in FREQUENCY_LISTS["passwords"])


_PADDING = "0123456789!@#$%^&*()-_=+.,;:?/\\|~`'\" []{}<>"


def is_common_password(password: str) -> bool:
    """In the list, or a listed password with digits or symbols added before or after ("baseball1234")."""
    lowered = password.lower()
    return lowered in _common_passwords() or lowered.strip(_PADDING) in _common_passwords()


def password_problem(password: str, email: str) -> str | None:
    """Why `password` may not be the password of account `email` (short, common, has the local part), or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return _("The password must be at least %(count)d characters long.", count=MIN_PASSWORD_LENGTH)
    if len(password) > MAX_PASSWORD_LENGTH:
        return _("The password must be at most %(count)d characters long.", count=MAX_PASSWORD_LENGTH)
    if is_common_password(password):
        return _("This password is in a list of commonly used passwords; choose another.")
    local_part = email.strip().lower().partition("@")[0]
    if len(local_part) >= 3 and local_part in password.lower():
        return _("The password must not contain the name part of your email address.")
    return None
