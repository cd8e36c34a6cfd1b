"""Signing secrets and the `v1` request signature.

signature = lowercase hex HMAC-SHA256 over `<timestamp>.<raw body>`, keyed with the whole `whsec_…`
string (UTF-8) exactly as the institution was shown it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from core.secret_key import decrypted_or_none, derived_fernet

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
        self._fernet = derived_fernet(secret_key, _KDF_INFO)

    def encrypt(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        secret = decrypted_or_none(self._fernet, token.encode("ascii"))
        if secret is None:
            raise ValueError("the stored signing secret cannot be decrypted with this SECRET_KEY")
        return secret.decode("utf-8")
