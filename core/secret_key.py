"""`SECRET_KEY` at start-up: never a public default, never a weak key; unset, one generated once into the
instance folder's key file. The key ring: `SECRET_KEY` signs and encrypts, `SECRET_KEY_FALLBACKS` are still
accepted, by every signer and box built here."""
from __future__ import annotations

import base64
import logging
import math
import os
import secrets
import stat
from collections import Counter
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from core.config import ConfigurationError, settings

MIN_SECRET_KEY_LENGTH = 32
# The default of earlier releases: public, so a key equal to it is as good as none.
# Keys that are public: the old built-in default and the placeholder of deploy/systemd/karibu.env.example.
RETIRED_DEFAULT_SECRET_KEYS = frozenset({"dev-insecure-secret-change-me",
                                         "change-me-to-64-random-characters-shared-by-all-nodes"})
SECRET_KEY_FILE_NAME = "secret_key"
# A key must carry at least this much entropy, estimated from its characters' frequencies: a random
# `token_urlsafe(48)` scores about 350 bits, a random `token_hex(16)` (128 real bits) never less than 90,
# `x` * 64 scores none. The estimate is crude; the other checks catch what it overrates.
MIN_SECRET_KEY_BITS = 80
MIN_DISTINCT_CHARACTERS = 8
HOW_TO_GENERATE = "python -c 'import secrets; print(secrets.token_urlsafe(48))'"


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
    _refuse_weak(key, f"SECRET_KEY (read from {key_file})")
    log.warning("SECRET_KEY is not set: using the generated key in %s. When several machines serve Karibu, "
                "set the same SECRET_KEY on every one of them (sessions, links and cursors signed by one must "
                "be accepted by all, and webhook secrets must be decrypted by all).", key_file)
    return key


def check_fallback_keys(fallbacks: Sequence[str], secret_key: str, log: logging.Logger) -> None:
    """Refuse a weak fallback as SECRET_KEY itself would be refused (named by position, never shown); say at
    start-up that a rotation is under way."""
    for position, key in enumerate(fallbacks, start=1):
        _refuse_weak(key, f"SECRET_KEY_FALLBACKS (key {position} of {len(fallbacks)})")
        if key == secret_key:
            raise ConfigurationError(f"SECRET_KEY_FALLBACKS (key {position} of {len(fallbacks)}) is SECRET_KEY "
                                     "itself: put the new key in SECRET_KEY and the old one in SECRET_KEY_FALLBACKS")
    if fallbacks:
        log.warning("SECRET_KEY is being rotated: %d fallback key(s) still accepted. Run `flask --app wsgi secrets "
                    "reencrypt`, then drop SECRET_KEY_FALLBACKS once the longest session and signed link made "
                    "under them has run out (/readyz counts the rows still to re-encrypt).", len(fallbacks))


def _refuse_weak(key: str, name: str) -> None:
    if key in RETIRED_DEFAULT_SECRET_KEYS:
        raise ConfigurationError(f"{name} is the old public default value: set a random SECRET_KEY of at least "
                                 f"{MIN_SECRET_KEY_LENGTH} characters (or unset it to have one generated), e.g. "
                                 f"{HOW_TO_GENERATE}")
    if len(key) < MIN_SECRET_KEY_LENGTH:
        raise ConfigurationError(f"{name} is too short ({len(key)} characters): use a random value of at least "
                                 f"{MIN_SECRET_KEY_LENGTH} characters, e.g. {HOW_TO_GENERATE}")
    weakness = _predictability(key)
    if weakness:
        raise ConfigurationError(f"{name} is not random enough ({weakness}): use a random value, e.g. "
                                 f"{HOW_TO_GENERATE}")


def _predictability(key: str) -> str:
    """Why `key` is guessable despite its length ("" when nothing is found): few distinct characters, a short
    run repeated, a run of consecutive characters (`abcdef…`, `0123…`), or too little entropy overall."""
    if len(set(key)) < MIN_DISTINCT_CHARACTERS:
        return f"fewer than {MIN_DISTINCT_CHARACTERS} different characters"
    if (key + key).find(key, 1) < len(key):  # a rotation equal to itself: some shorter run repeated
        return "a short sequence repeated"
    steps = sum(1 for before, after in zip(key, key[1:]) if abs(ord(after) - ord(before)) <= 1)
    if steps * 4 >= (len(key) - 1) * 3:
        return "mostly consecutive or repeated characters"
    counts = Counter(key).values()
    bits = -sum(count * math.log2(count / len(key)) for count in counts)
    if bits < MIN_SECRET_KEY_BITS:
        return f"about {int(bits)} bits of entropy, at least {MIN_SECRET_KEY_BITS} are needed"
    return ""


def _read_or_create(key_file: Path) -> str:
    """Read the key file, creating it first if absent (safe when several processes start at once); refused when
    other users may read it."""
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
    mode = stat.S_IMODE(key_file.stat().st_mode)
    if mode & 0o077:
        raise ConfigurationError(f"the SECRET_KEY file {key_file} may be read by other users (mode {mode:04o}): "
                                 f"run chmod 600 {key_file} (and replace the key if anyone else could have read "
                                 "it), or set SECRET_KEY")
    return key_file.read_text().strip()


def warn_about_readable_dotenv(dotenv: Path, log: logging.Logger) -> None:
    """`.env` holds SECRET_KEY and other secrets: say loudly when other users may read it."""
    try:
        mode = stat.S_IMODE(dotenv.stat().st_mode)
    except OSError:
        return
    if mode & 0o077:
        log.warning("SECURITY: %s may be read by other users (mode %04o) and it can hold SECRET_KEY and other "
                    "secrets: run chmod 600 %s", dotenv.resolve(), mode, dotenv.resolve())


def key_ring() -> tuple[str, ...]:
    """The running app's keys: SECRET_KEY first (it signs and encrypts), then SECRET_KEY_FALLBACKS (accepted)."""
    config = settings()
    return (config.SECRET_KEY, *config.SECRET_KEY_FALLBACKS)


def signing_keys() -> list[str]:
    """The key ring in itsdangerous' order, the signing key last: the `secret_key` of every serializer."""
    return list(reversed(key_ring()))


def derived_fernet(secret_key: str | Sequence[str], label: bytes):
    """A MultiFernet box (AES-128-CBC + HMAC) under keys derived by HKDF-SHA256 with `label` (one label per use of
    SECRET_KEY): from a ring of keys (the first encrypts, each decrypts), or from the running app's SECRET_KEY
    given alone, ringed then with its SECRET_KEY_FALLBACKS."""
    ring = (secret_key, *settings().SECRET_KEY_FALLBACKS) if isinstance(secret_key, str) else tuple(secret_key)
    return _ring_box(ring, label)


def current_key_fernet(label: bytes):
    """The box of SECRET_KEY alone: what reads a ciphertext that needs no re-encryption."""
    return _ring_box(key_ring()[:1], label)


@cache
def _ring_box(ring: tuple[str, ...], label: bytes):
    from cryptography.fernet import MultiFernet

    return MultiFernet([_fernet(key, label) for key in ring])


@cache
def _fernet(secret_key: str, label: bytes):
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
