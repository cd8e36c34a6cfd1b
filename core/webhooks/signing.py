"""Signing secrets and the `v1` request signature.

signature = lowercase hex HMAC-SHA256 over `<timestamp>.<raw body>`, keyed with the whole `whsec_…`
string (UTF-8) exactly as the institution was shown it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"
USER_AGENT = "Karibu-Webhooks/1"
_KDF_INFO = b"karibu webhook signing secrets v1"


def generate_secret() -> str:
    """A new signing secret: `whsec_` + 43 URL-safe characters (256 random bits)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-Karibu-Signature` header value for `body` sent at `timestamp` (Unix seconds)."""
    message = str(int(timestamp)).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={digest}"


def delivery_headers(*, secret: str, timestamp: int, body: bytes, event_id: str, event_type: str,
                     institution_id: str) -> dict[str, str]:
    """Every header of a delivery request, signed over exactly `body`."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Idempotency-Key": event_id,
        "X-Karibu-Event-Id": event_id,
        "X-Karibu-Event-Type": event_type,
        "X-Karibu-Institution-Id": institution_id,
        "X-Karibu-Timestamp": str(int(timestamp)),
        "X-Karibu-Signature": sign(secret, timestamp, body),
    }


class SecretBox:
    """Encrypts signing secrets at rest (Fernet: AES-128-CBC + HMAC) with a key derived from SECRET_KEY."""

    def __init__(self, secret_key: str):
        if not secret_key:
            raise ValueError("SECRET_KEY is required to store webhook signing secrets")
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_KDF_INFO).derive(
            secret_key.encode("utf-8")
        )
        self._fernet = Fernet(base64.urlsafe_b64encode(key))

    def encrypt(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except InvalidToken as exc:
            raise ValueError("the stored signing secret cannot be decrypted with this SECRET_KEY") from exc
