"""Verification settings, built from the typed `core.config.Settings` (documented in core/config.py)."""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from decimal import Decimal

from core.verification.adapters import RegistryEndpoint


@dataclass(frozen=True)
class VerificationSettings:
    endpoints: dict[str, RegistryEndpoint]
    default_price: Decimal
    default_currency: str
    hash_key: bytes

    @classmethod
    def from_settings(cls, settings, registry_codes) -> "VerificationSettings":
        connect, read = float(settings.REGISTRY_CONNECT_TIMEOUT), float(settings.REGISTRY_READ_TIMEOUT)
        endpoints = {
            code: RegistryEndpoint(base_url=getattr(settings, f"REGISTRY_{code}_URL"),
                                   token=getattr(settings, f"REGISTRY_{code}_TOKEN"),
                                   connect_timeout=connect, read_timeout=read)
            for code in registry_codes
        }
        return cls(
            endpoints=endpoints,
            default_price=Decimal(str(settings.VERIFICATION_DEFAULT_PRICE)),
            default_currency=str(settings.VERIFICATION_DEFAULT_CURRENCY),
            hash_key=hash_key(settings.VERIFICATION_HASH_KEY or "", settings.SECRET_KEY),
        )


def hash_key(configured: str, secret_key: str) -> bytes:
    """The configured key, else one derived from SECRET_KEY (so hashes change if SECRET_KEY is rotated)."""
    if configured:
        return configured.encode()
    return hmac.new(secret_key.encode(), b"karibu/verification/identifiers", hashlib.sha256).digest()
