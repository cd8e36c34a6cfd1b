"""`SECRET_KEY` at start-up: never a public default, never a weak key.

It signs sessions, cursors and decision links and derives the key that encrypts webhook secrets, so a known
or guessable value hands all of them to anyone. Unset, a random key is generated once and kept in a file of
the instance folder (mode 0600) that every later start reuses; several machines must share one key, so a
warning says to set it explicitly there.
"""
from __future__ import annotations

import base64
import logging
import os
import secrets
from functools import cache
from pathlib import Path

from core.config import ConfigurationError

MIN_SECRET_KEY_LENGTH = 32
# The default of earlier releases: public, so a key equal to it is as good as none.
# Keys that are public: the old built-in default and the placeholder of deploy/systemd/karibu.env.example.
RETIRED_DEFAULT_SECRET_KEYS = frozenset({"dev-insecure-secret-change-me",
                                         "change-me-to-64-random-characters-shared-by-all-nodes"})
SECRET_KEY_FILE_NAME = "secret_key"


def resolve_secret_key(configured: str, key_file: Path, log: logging.Logger) -> str:
    """The key to sign with: the configured one if it is strong, else the generated one in `key_file`."""
    if configured:
        _refuse_weak(configured, "SECRET_KEY")
        return configured
    try:
        key = _read_or_create(key_file)
    except OSError as error:
        raise ConfigurationError(f"SECRET_KEY is not set and the generated key cannot be kept in {key_file} "
                                 f"({error.strerror}): set SECRET_KEY, or SECRET_KEY_FILE to a writable path") from None
    _refuse_weak(key, f"SECRET_KEY (generated into {key_file})")
    log.warning("SECRET_KEY is not set: using the generated key in %s. When several machines serve Karibu, "
                "set the same SECRET_KEY on every one of them (sessions, links and cursors signed by one must "
                "be accepted by all, and webhook secrets must be decrypted by all).", key_file)
    return key


def _refuse_weak(key: str, name: str) -> None:
    if key in RETIRED_DEFAULT_SECRET_KEYS:
        raise ConfigurationError(f"{name} is the old public default value: set a random SECRET_KEY of at least "
                                 f"{MIN_SECRET_KEY_LENGTH} characters (or unset it to have one generated)")
    if len(key) < MIN_SECRET_KEY_LENGTH:
        raise ConfigurationError(f"{name} is too short ({len(key)} characters): use a random value of at least "
                                 f"{MIN_SECRET_KEY_LENGTH} characters, e.g. "
                                 "python -c 'import secrets; print(secrets.token_urlsafe(48))'")


def _read_or_create(key_file: Path) -> str:
    """Read the key file, creating it first if absent; safe when several processes start at once.

    The new key is written to a private temporary file and linked into place, which fails if another
    process got there first: then its key is read, so every process ends up with the same one.
    """
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = key_file.with_name(f".{key_file.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.fchmod(descriptor, 0o600)
            os.write(descriptor, (secrets.token_urlsafe(48) + "\n").encode())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        try:
            os.link(temporary, key_file)
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return key_file.read_text().strip()


@cache
def derived_fernet(secret_key: str, label: bytes):
    """A Fernet box (AES-128-CBC + HMAC) under a key derived from `secret_key` by HKDF-SHA256 with its own
    `label`, so each use of SECRET_KEY (webhook secrets, two-factor secrets) has a key of its own.

    `cryptography` (a heavy import) is imported here, when a secret is first stored or read, not by every
    web worker at start.
    """
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label).derive(secret_key.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(key))


def decrypted_or_none(box, token: bytes) -> bytes | None:
    """`box.decrypt(token)`, or None when the token was made under another key or was altered."""
    from cryptography.fernet import InvalidToken

    try:
        return box.decrypt(token)
    except InvalidToken:
        return None
