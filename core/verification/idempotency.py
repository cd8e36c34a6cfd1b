"""`Idempotency-Key` handling: the same key and body within 24 h replay the stored answer; one in flight is a 409."""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from core.errors import Conflict, InvalidInput
from core.db import db
from core.models import utcnow
from core.models.verification import VerificationIdempotency

HEADER = "Idempotency-Key"
REPLAY_WINDOW = timedelta(hours=24)
KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")


@dataclass(frozen=True)
class StoredAnswer:
    status_code: int
    body: dict


@dataclass(frozen=True)
class Claim:
    row_id: int


def check_key(key: str | None) -> str | None:
    if key is None:
        return None
    if not KEY_PATTERN.match(key):
        raise InvalidInput(f"{HEADER} must be 1 to 255 printable ASCII characters without spaces", header=HEADER)
    return key


def request_fingerprint(hash_key: bytes, body: dict) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(hash_key, canonical.encode(), hashlib.sha256).hexdigest()


def claim(scope: str, key: str, fingerprint: str, lock_for: timedelta,
          earlier_fingerprints: tuple[str, ...] = ()) -> Claim | StoredAnswer:
    """Claim the key for this request, or return the stored answer to replay (the stored request matches
    `fingerprint`, or one of `earlier_fingerprints`, its hashes under the fallback keys).

    Raises InvalidInput when the key was used with another body, Conflict while another request holds it.
    """
    for _ in range(2):
        now = utcnow()
        db.session.execute(delete(VerificationIdempotency).where(
            VerificationIdempotency.scope == scope, VerificationIdempotency.expires_at <= now))
        existing = db.session.scalars(select(VerificationIdempotency).where(
            VerificationIdempotency.scope == scope, VerificationIdempotency.idempotency_key == key)).one_or_none()
        if existing is None:
            row = VerificationIdempotency(scope=scope, idempotency_key=key, request_hash=fingerprint,
                                          created_at=now, locked_until=now + lock_for,
                                          expires_at=now + REPLAY_WINDOW)
            db.session.add(row)
            try:
                db.session.commit()
            except IntegrityError:
                db.session.rollback()
                continue
            return Claim(row.id)
        if not any(hmac.compare_digest(existing.request_hash, candidate)
                   for candidate in (fingerprint, *earlier_fingerprints)):
            db.session.commit()
            raise InvalidInput(f"This {HEADER} was already used with a different request body; "
                               "use a new key for a new request", header=HEADER)
        if existing.status_code is not None:
            answer = StoredAnswer(existing.status_code, existing.response_body)
            db.session.commit()
            return answer
        if existing.locked_until > now:
            db.session.commit()
            raise Conflict(f"A request with this {HEADER} is still in progress; retry in a few seconds",
                           header=HEADER)
        taken = db.session.execute(
            update(VerificationIdempotency)
            .where(VerificationIdempotency.id == existing.id, VerificationIdempotency.status_code.is_(None),
                   VerificationIdempotency.locked_until == existing.locked_until)
            .values(locked_until=now + lock_for)).rowcount
        db.session.commit()
        if taken:
            return Claim(existing.id)
    raise Conflict(f"A request with this {HEADER} is still in progress; retry in a few seconds", header=HEADER)


def store_answer(claimed: Claim, status_code: int, body: dict) -> None:
    """Record the answer in the current session; the caller commits it together with the ledger row."""
    db.session.execute(update(VerificationIdempotency).where(VerificationIdempotency.id == claimed.row_id)
                       .values(status_code=status_code, response_body=body))


def release(claimed: Claim) -> None:
    db.session.rollback()
    db.session.execute(delete(VerificationIdempotency).where(VerificationIdempotency.id == claimed.row_id,
                                                             VerificationIdempotency.status_code.is_(None)))
    db.session.commit()
