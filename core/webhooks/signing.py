"""Signing secrets and the two signatures every delivery carries: Karibu's `X-Karibu-Signature` and Standard
Webhooks' `webhook-signature` (docs/contract.md, docs/webhooks.md)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Sequence

from core.secret_key import decrypted_or_none, derived_fernet

SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"
SECRET_BYTES = 32
USER_AGENT = "Karibu-Webhooks/1"
WEBHOOK_SECRET_LABEL = b"karibu webhook signing secrets v1"  # the HKDF label of the secrets' key


def generate_secret() -> str:
    """A new signing secret: `whsec_` + standard base64 of 32 random bytes (44 characters)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def standard_webhooks_key(secret: str) -> bytes:
    """The Standard Webhooks HMAC key: what the base64 after `whsec_` decodes to, or, for a secret made
    before Standard Webhooks support (not base64), the whole secret's UTF-8 bytes."""
    try:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error:
        return secret.encode("utf-8")


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-Karibu-Signature` header value for `body` sent at `timestamp` (Unix seconds)."""
    message = str(int(timestamp)).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={digest}"


def sign_standard(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks `webhook-signature` header value for `body` sent as `message_id` at `timestamp`."""
    message = f"{message_id}.{int(timestamp)}.".encode("utf-8") + body
    digest = hmac.new(standard_webhooks_key(secret), message, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"


def delivery_headers(*, secret: str, timestamp: int, body: bytes, event_id: str, event_type: str,
                     institution_id: str, livemode: bool = True) -> dict[str, str]:
    """Every header of a delivery request, signed over exactly `body`: Karibu's own (`X-Karibu-Mode`: `live`, or
    `test` for a sandbox's event), then Standard Webhooks'."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Idempotency-Key": event_id,
        "X-Karibu-Event-Id": event_id,
        "X-Karibu-Event-Type": event_type,
        "X-Karibu-Institution-Id": institution_id,
        "X-Karibu-Mode": "live" if livemode else "test",
        "X-Karibu-Timestamp": str(int(timestamp)),
        "X-Karibu-Signature": sign(secret, timestamp, body),
        "webhook-id": event_id,
        "webhook-timestamp": str(int(timestamp)),
        "webhook-signature": sign_standard(secret, event_id, timestamp, body),
    }


class SecretBox:
    """Encrypts signing secrets at rest (Fernet: AES-128-CBC + HMAC) with a key derived from the key ring's
    first key (`keys`: one key, or SECRET_KEY then its fallbacks), and decrypts under any key of the ring."""

    def __init__(self, keys: str | Sequence[str]):
        ring = (keys,) if isinstance(keys, str) else tuple(keys)
        if not all(ring):
            raise ValueError("SECRET_KEY is required to store webhook signing secrets")
        self._fernet = derived_fernet(ring, WEBHOOK_SECRET_LABEL)

    def encrypt(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        secret = decrypted_or_none(self._fernet, token.encode("ascii"))
        if secret is None:
            raise ValueError("the stored signing secret cannot be decrypted with SECRET_KEY nor any of SECRET_KEY_FALLBACKS")
        return secret.decode("utf-8")
