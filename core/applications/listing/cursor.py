"""Signed cursors: where a page ended, bound to the query that produced it and the institution it was issued to."""
from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from itsdangerous import BadData, URLSafeSerializer

from core.errors import InvalidInput
from core.scoping import InstitutionScope
from core.secret_key import key_ring, signing_keys


@dataclass(frozen=True)
class Position:
    """Where the previous page ended (the sort values of its last row, id last), and for which institution
    the cursor was issued."""
    institution_id: str
    values: tuple


@dataclass(frozen=True)
class QueryFingerprint:
    """A query's keyed hash under each key of the ring: a new cursor carries SECRET_KEY's, one made under a
    fallback key still matches."""
    under_each_key: tuple[str, ...]

    def matches(self, carried: str) -> bool:
        return any(hmac.compare_digest(carried, candidate) for candidate in self.under_each_key)


def _serializer() -> URLSafeSerializer:
    return URLSafeSerializer(signing_keys(), salt="karibu.cursor.v1")


def query_fingerprint(kind: str, limit: int, canonical_filters: Mapping[str, str]) -> QueryFingerprint:
    canonical = json.dumps({"kind": kind, "limit": limit, "filters": dict(sorted(canonical_filters.items()))},
                           separators=(",", ":")).encode()
    return QueryFingerprint(tuple(hmac.new(key.encode(), canonical, hashlib.sha256).hexdigest()[:24]
                                  for key in key_ring()))


def encode_cursor(fingerprint: QueryFingerprint, position: list) -> str:
    return _serializer().dumps([fingerprint.under_each_key[0], *position])


def decode_cursor(token: str, fingerprint: QueryFingerprint) -> list:
    """The position stored in `token`; raises InvalidInput (parameter `cursor`) on any mismatch."""
    try:
        payload = _serializer().loads(token)
    except BadData:
        raise InvalidInput("invalid cursor", parameter="cursor") from None
    if not isinstance(payload, list) or len(payload) < 2 or not isinstance(payload[0], str):
        raise InvalidInput("invalid cursor", parameter="cursor")
    if not fingerprint.matches(payload[0]):
        raise InvalidInput("cursor does not match this query", parameter="cursor")
    return payload[1:]


def open_cursor(args: Mapping[str, str], fingerprint: QueryFingerprint,
                 kinds: tuple[str, ...] = ("datetime", "text")) -> Position | None:
    token = args.get("cursor")
    if not token:
        return None
    position = decode_cursor(token, fingerprint)
    try:
        institution_id, *values = position
        if len(values) != len(kinds) or not all(isinstance(value, str) for value in values):
            raise ValueError("cursor shape")
        return Position(str(institution_id), tuple(
            datetime.fromisoformat(value) if kind == "datetime" else value for kind, value in zip(kinds, values)))
    except (TypeError, ValueError):
        raise InvalidInput("invalid cursor", parameter="cursor") from None


def next_cursor(scope: InstitutionScope, fingerprint: QueryFingerprint, *values) -> str:
    return encode_cursor(fingerprint, [scope.institution_id, *(
        value.isoformat() if isinstance(value, datetime) else value for value in values)])


def check_issuer(scope: InstitutionScope, position: Position) -> None:
    """A cursor issued to another institution does not match this query."""
    if not hmac.compare_digest(position.institution_id, scope.institution_id):
        raise InvalidInput("cursor does not match this query", parameter="cursor")
