"""The store of `Idempotency-Key`s: claim a key for a request (committed before the work runs, so a concurrent
request sees it), record its answer, replay that answer for 24 hours, release the key when the work failed.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from core.db import db
from core.errors import Conflict, InvalidInput
from core.models import IdempotencyKey, utcnow
from core.secret_key import key_ring

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
REPLAY_WINDOW = timedelta(hours=24)
# How long a claimed key without an answer refuses other requests (then a retry may take it over): longer than
# any write runs (gunicorn's timeout is 60 s).
IN_FLIGHT_LEASE = timedelta(seconds=90)
KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")
HASH_LABEL = b"karibu/idempotency/requests"
# The claim of the request being served, if it sent a key: a service that commits its work may record its answer
# in that same transaction (`store_answer`), so the work and the answer are kept or lost together.
CURRENT_CLAIM: ContextVar[Claim | None] = ContextVar("idempotency_claim", default=None)


class KeyReused(InvalidInput):
    """422: the key was used with another request (method, path or body)."""

    status = 422


@dataclass(frozen=True)
class StoredAnswer:
    status_code: int
    content_type: str
    body: bytes


@dataclass
class Claim:
    row_id: int
    answered: bool = False


def check_key(key: str | None) -> str | None:
    """The key as sent, None when absent; InvalidInput (reason `idempotency_key_invalid`) when malformed."""
    if key is None:
        return None
    if not KEY_PATTERN.match(key):
        raise InvalidInput(f"{HEADER} must be 1 to 255 printable ASCII characters without spaces", header=HEADER,
                           reason="idempotency_key_invalid")
    return key


def request_hashes(method: str, path: str, body: bytes) -> tuple[str, ...]:
    """The request's keyed hashes, under SECRET_KEY first and then each fallback (a hash made before a rotation
    still matches). A JSON body is hashed in canonical form, so key order and spacing do not count."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    except ValueError:
        canonical = body
    message = method.upper().encode() + b"\n" + path.encode() + b"\n" + canonical
    return tuple(hmac.new(hmac.new(secret.encode(), HASH_LABEL, hashlib.sha256).digest(), message,
                          hashlib.sha256).hexdigest() for secret in key_ring())


def claim(scope: str, key: str, hashes: tuple[str, ...], lease: timedelta = IN_FLIGHT_LEASE) -> Claim | StoredAnswer:
    """Claim `key` of the credential `scope` for the request of `hashes` (committed), or return its stored answer.

    Raises KeyReused (422) when the key was used with another request, Conflict (409) while another holds it.
    """
    for _ in range(3):
        now = utcnow()
        # A plain read first: on SQLite it takes no write lock, so a request in flight is seen without waiting.
        existing = db.session.scalars(select(IdempotencyKey).where(
            IdempotencyKey.scope == scope, IdempotencyKey.idempotency_key == key)).one_or_none()
        if existing is not None and existing.expires_at <= now:  # older than 24 h, not yet purged
            db.session.execute(delete(IdempotencyKey).where(IdempotencyKey.id == existing.id))
            db.session.commit()
            continue
        if existing is None:
            row = IdempotencyKey(scope=scope, idempotency_key=key, request_hash=hashes[0], created_at=now,
                                 locked_until=now + lease, expires_at=now + REPLAY_WINDOW)
            db.session.add(row)
            try:
                db.session.commit()
            except IntegrityError:  # another request claimed it between our read and our insert
                db.session.rollback()
                continue
            return Claim(row.id)
        db.session.commit()
        if not any(hmac.compare_digest(existing.request_hash, candidate) for candidate in hashes):
            raise KeyReused(f"This {HEADER} was already used with a different request (method, path or body); "
                            "use a new key for a new request", header=HEADER, reason="idempotency_key_reused")
        if existing.status_code is not None:
            return StoredAnswer(existing.status_code, existing.content_type, existing.response_body)
        if existing.locked_until > now:
            break
        taken = db.session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.id == existing.id, IdempotencyKey.status_code.is_(None),
                   IdempotencyKey.locked_until == existing.locked_until)
            .values(locked_until=now + lease)).rowcount
        db.session.commit()
        if taken:
            return Claim(existing.id)
    raise Conflict(f"A request with this {HEADER} is still in progress; retry in a few seconds", header=HEADER,
                   reason="idempotency_key_in_use")


def store_answer(status_code: int, content_type: str, body: bytes) -> None:
    """Record the answer of the current claim (if any) in the current transaction; the caller commits it with its
    work. Does nothing for a request sent without a key."""
    claimed = CURRENT_CLAIM.get()
    if claimed is None:
        return
    db.session.execute(update(IdempotencyKey).where(IdempotencyKey.id == claimed.row_id)
                       .values(status_code=status_code, content_type=content_type, response_body=body))
    claimed.answered = True


def finish(claimed: Claim, status_code: int, content_type: str, body: bytes) -> None:
    """Record (and commit) the answer of a claim whose work did not record it itself."""
    if claimed.answered:
        return
    db.session.rollback()
    db.session.execute(update(IdempotencyKey).where(IdempotencyKey.id == claimed.row_id)
                       .values(status_code=status_code, content_type=content_type, response_body=body))
    db.session.commit()


def release(claimed: Claim) -> None:
    """Give the key back (the work failed, nothing of it kept): a retry with it runs afresh."""
    db.session.rollback()
    db.session.execute(delete(IdempotencyKey).where(IdempotencyKey.id == claimed.row_id,
                                                    IdempotencyKey.status_code.is_(None)))
    db.session.commit()
