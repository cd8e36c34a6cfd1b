"""A receiver-side verifier written only from the spec's signature recipe, sharing no code with Karibu.

HMAC-SHA256 is built by hand from RFC 2104 (hashlib.sha256 only), the comparison is constant-time, and
the raw body is verified before it is parsed.
"""

from __future__ import annotations

import hashlib
import json
import secrets

TOLERANCE_SECONDS = 5 * 60
_BLOCK = 64


def _hmac_sha256_hex(key: bytes, message: bytes) -> str:
    if len(key) > _BLOCK:
        key = hashlib.sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = hashlib.sha256(bytes(k ^ 0x36 for k in key) + message).digest()
    return hashlib.sha256(bytes(k ^ 0x5C for k in key) + inner).hexdigest()


class Rejected(Exception):
    pass


def verify(secret: str, headers: dict[str, str], raw_body: bytes, now: float) -> dict:
    """Return the parsed event, or raise Rejected."""
    lowered = {k.lower(): v for k, v in headers.items()}
    timestamp = lowered.get("x-karibu-timestamp")
    signature = lowered.get("x-karibu-signature", "")
    if timestamp is None or not timestamp.isdigit():
        raise Rejected("missing timestamp")
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        raise Rejected("timestamp outside tolerance")
    if not signature.startswith("v1="):
        raise Rejected("unknown signature scheme")
    expected = _hmac_sha256_hex(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + raw_body)
    if not secrets.compare_digest(expected, signature[3:]):
        raise Rejected("bad signature")
    return json.loads(raw_body)
