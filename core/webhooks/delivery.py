"""One delivery attempt: claim the delivery, sign and POST outside any transaction, record the outcome.

The claim is a conditional UPDATE (a lease): only one worker can own a due delivery at a time, and a
killed worker's lease lapses so the sweep can hand the delivery to another. Failures move the delivery
along the retry schedule and count towards the endpoint's consecutive failures.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update

from core.extensions import db
from core.models import Event
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.timefmt import isoformat_z
from core.webhooks.endpoints import disable_endpoint_after_failures, signing_secret
from core.webhooks.runtime import runtime
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES, next_attempt_at
from core.webhooks.signing import delivery_headers
from core.webhooks.transport import DEADLINE_SECONDS, AttemptOutcome

# Longer than an attempt can take (10 s deadline plus the database work around it).
LEASE = timedelta(seconds=DEADLINE_SECONDS * 6)
EPOCH = datetime(1970, 1, 1)


@dataclass(frozen=True)
class AttemptReport:
    delivery_id: str
    sent: bool  # False when there was nothing to do (not due, already claimed, final, disabled)
    status: str | None = None
    outcome: AttemptOutcome | None = None


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


def _claim(delivery_id: str, now) -> str | None:
    token = secrets.token_hex(8)
    claimed = db.session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id == delivery_id,
            WebhookDelivery.status.in_(SENDABLE_STATUSES),
            WebhookDelivery.next_attempt_at <= now,
            or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now),
        )
        .values(lease_token=token, lease_expires_at=now + LEASE)
    ).rowcount
    db.session.commit()
    return token if claimed else None


def attempt_delivery(delivery_id: str) -> AttemptReport:
    """Make the next attempt of a delivery if it is due and unclaimed."""
    clock = runtime.clock
    token = _claim(delivery_id, clock.now())
    if token is None:
        return AttemptReport(delivery_id, sent=False)
    delivery, event, endpoint = db.session.execute(
        select(WebhookDelivery, Event, WebhookEndpoint)
        .join(Event, Event.id == WebhookDelivery.event_id)
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .where(WebhookDelivery.id == delivery_id)
    ).one()
    if not endpoint.enabled:
        delivery.status = "endpoint_disabled"
        delivery.next_attempt_at = delivery.lease_token = delivery.lease_expires_at = None
        db.session.commit()
        return AttemptReport(delivery_id, sent=False, status=delivery.status)

    url, endpoint_id, number = endpoint.url, endpoint.id, delivery.attempts + 1
    body = event_body(event)
    secret = signing_secret(endpoint)
    db.session.commit()  # no transaction stays open while the request is in flight

    attempted_at = clock.now()
    headers = delivery_headers(secret=secret, timestamp=unix_seconds(attempted_at), body=body, event_id=event.id, event_type=event.type,
                               institution_id=event.institution_id)
    outcome = runtime.transport().post(url, headers, body)
    status = _record(delivery_id, token, endpoint_id, number, url, attempted_at, outcome)
    return AttemptReport(delivery_id, sent=True, status=status, outcome=outcome)


def unix_seconds(naive_utc: datetime) -> int:
    return int((naive_utc - EPOCH).total_seconds())


def _record(delivery_id, token, endpoint_id, number, url, attempted_at, outcome: AttemptOutcome) -> str:
    now = runtime.clock.now()
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
