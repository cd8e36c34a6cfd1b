"""Delivery attempts: claim due deliveries, sign and POST outside any transaction, record each outcome.

The claim is a conditional UPDATE (a lease): only one worker can own a due delivery at a time, and a
killed worker's lease lapses so the sweep can hand the delivery to another. Failures move the delivery
along the retry schedule and count towards the endpoint's consecutive failures.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select, text, update

from core.extensions import db
from core.models import Event
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.timefmt import isoformat_z
from core.webhooks.endpoints import disable_endpoint_after_failures, signing_secret
from core.webhooks.runtime import runtime
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES, next_attempt_at
from core.webhooks.signing import delivery_headers
from core.webhooks.transport import DEADLINE_SECONDS, AttemptOutcome

# Deliveries leased at once by one worker; the lease outlasts a whole batch of 10 s attempts.
CLAIM_BATCH = 8
LEASE = timedelta(seconds=DEADLINE_SECONDS * (CLAIM_BATCH + 4))
# A drain stops claiming new batches after this long, so one job never runs for ever.
DRAIN_TIME_BUDGET = 20.0
EPOCH = datetime(1970, 1, 1)


@dataclass(frozen=True)
class AttemptReport:
    delivery_id: str
    status: str  # the delivery's status after the attempt (`lease_lost` if another worker took it over)
    outcome: AttemptOutcome


@dataclass(frozen=True)
class DrainResult:
    attempts: list[AttemptReport]
    more_due: bool  # the time budget ran out before the due deliveries did


def event_body(event: Event) -> bytes:
    """The exact request body: the spec's envelope, compact JSON, UTF-8."""
    envelope = {
        "event_id": event.id,
        "type": event.type,
        "occurred_at": isoformat_z(event.occurred_at),
        "institution_id": event.institution_id,
        "data": event.payload,
    }
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _without_waiting_for_disk() -> None:
    """Let this transaction's commit return before its WAL record is flushed (PostgreSQL only).

    Safe for claims and attempt records: if the database crashes and forgets the last moments of them, the
    delivery is simply attempted again (at-least-once), and the event and delivery rows themselves were
    committed durably by the transaction that emitted them.
    """
    if db.session.get_bind().dialect.name == "postgresql":
        db.session.execute(text("SET LOCAL synchronous_commit TO OFF"))


@dataclass(frozen=True)
class PreparedAttempt:
    delivery_id: str
    endpoint_id: str
    number: int
    url: str
    secret: str
    body: bytes
    event_id: str
    event_type: str
    institution_id: str


def claim_due(now: datetime, limit: int = CLAIM_BATCH) -> tuple[str, list[str]]:
    """Lease up to `limit` due, unclaimed deliveries (oldest first); returns (lease token, their ids)."""
    token = secrets.token_hex(8)
    _without_waiting_for_disk()
    due = (
        select(WebhookDelivery.id)
        .where(
            WebhookDelivery.status.in_(SENDABLE_STATUSES),
            WebhookDelivery.next_attempt_at <= now,
            or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now),
        )
        .order_by(WebhookDelivery.next_attempt_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    claimed = list(db.session.scalars(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id.in_(due.scalar_subquery()),
            # checked again on the locked row, so two workers can never lease the same delivery
            WebhookDelivery.status.in_(SENDABLE_STATUSES),
            or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now),
        )
        .values(lease_token=token, lease_expires_at=now + LEASE)
        .returning(WebhookDelivery.id)
    ))
    db.session.commit()
    return token, claimed


def _prepare(ids: list[str]) -> list[PreparedAttempt]:
    """Load what the claimed deliveries need; those whose endpoint is disabled are recorded as skipped."""
    rows = db.session.execute(
        select(WebhookDelivery, Event, WebhookEndpoint)
        .join(Event, Event.id == WebhookDelivery.event_id)
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .where(WebhookDelivery.id.in_(ids))
        .order_by(WebhookDelivery.next_attempt_at)
    ).all()
    prepared = []
    for delivery, event, endpoint in rows:
        if not endpoint.enabled:
            delivery.status = "endpoint_disabled"
            delivery.next_attempt_at = delivery.lease_token = delivery.lease_expires_at = None
            continue
        prepared.append(PreparedAttempt(
            delivery_id=delivery.id, endpoint_id=endpoint.id, number=delivery.attempts + 1, url=endpoint.url,
            secret=signing_secret(endpoint), body=event_body(event), event_id=event.id, event_type=event.type,
            institution_id=event.institution_id,
        ))
    db.session.commit()  # no transaction stays open while requests are in flight
    return prepared


def _still_ours(attempt: PreparedAttempt, token: str) -> bool:
    """The lease is still held and the endpoint still enabled (another worker may have disabled it)."""
    found = db.session.execute(
        select(WebhookDelivery.id)
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .where(WebhookDelivery.id == attempt.delivery_id, WebhookDelivery.lease_token == token,
               WebhookEndpoint.enabled.is_(True))
    ).first()
    db.session.commit()
    return found is not None


def _send(attempt: PreparedAttempt, token: str) -> AttemptReport:
    attempted_at = runtime.clock.now()
    headers = delivery_headers(secret=attempt.secret, timestamp=unix_seconds(attempted_at), body=attempt.body,
                               event_id=attempt.event_id, event_type=attempt.event_type,
                               institution_id=attempt.institution_id)
    outcome = runtime.transport().post(attempt.url, headers, attempt.body)
    status = _record(attempt.delivery_id, token, attempt.endpoint_id, attempt.number, attempt.url, attempted_at,
                     outcome)
    return AttemptReport(attempt.delivery_id, status, outcome)


def drain_due_deliveries(time_budget: float = DRAIN_TIME_BUDGET) -> DrainResult:
    """Claim and attempt due deliveries, a batch at a time, until none is due or the time budget is spent."""
    started = time.monotonic()
    reports: list[AttemptReport] = []
    while time.monotonic() - started < time_budget:
        token, ids = claim_due(runtime.clock.now())
        if not ids:
            return DrainResult(reports, more_due=False)
        for attempt in _prepare(ids):
            if _still_ours(attempt, token):
                reports.append(_send(attempt, token))
    return DrainResult(reports, more_due=True)


def unix_seconds(naive_utc: datetime) -> int:
    return int((naive_utc - EPOCH).total_seconds())


def _record(delivery_id, token, endpoint_id, number, url, attempted_at, outcome: AttemptOutcome) -> str:
    now = runtime.clock.now()
    _without_waiting_for_disk()
    db.session.add(WebhookAttempt(
        delivery_id=delivery_id,
        number=number,
        url=url,
        attempted_at=attempted_at,
        duration_ms=outcome.duration_ms,
        response_code=outcome.status_code,
        error_class=outcome.error_class,
        error=outcome.error,
        response_excerpt=outcome.body_excerpt,
    ))
    common = dict(attempts=number, last_response_code=outcome.status_code, last_error_class=outcome.error_class,
                  lease_token=None, lease_expires_at=None, updated_at=now)
    if outcome.delivered:
        status = "delivered"
        values = dict(common, status=status, next_attempt_at=None, delivered_at=now)
    else:
        following = next_attempt_at(number, attempted_at)
        status = "retry_scheduled" if following is not None else "dead"
        values = dict(common, status=status, next_attempt_at=following)
    owned = db.session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id == delivery_id, WebhookDelivery.lease_token == token)
        .values(**values)
    ).rowcount
    if outcome.delivered:
        db.session.execute(
            update(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.consecutive_failures != 0)
            .values(consecutive_failures=0)
        )
    else:
        failures = db.session.execute(
            update(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id)
            .values(consecutive_failures=WebhookEndpoint.consecutive_failures + 1)
            .returning(WebhookEndpoint.consecutive_failures)
        ).scalar_one()
        if failures >= DISABLE_AFTER_CONSECUTIVE_FAILURES and disable_endpoint_after_failures(endpoint_id, now):
            status = "endpoint_disabled" if status == "retry_scheduled" else status
    db.session.commit()
    return status if owned else "lease_lost"
