"""Delivery attempts: claim due deliveries, sign and POST outside any transaction, record each outcome.

The claim is a conditional UPDATE (a lease): only one worker can own a due delivery at a time, and a
killed worker's lease lapses so the sweep can hand the delivery to another. Failures move the delivery
along the retry schedule and count towards the endpoint's consecutive failures.
"""

from __future__ import annotations

import json
import secrets
import time
from concurrent.futures import as_completed
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import bindparam, insert, or_, select, text, update

from core.events import envelope
from core.extensions import db
from core.metrics import WEBHOOK_ATTEMPTS, WEBHOOK_DELIVERY_LATENCY
from core.models import Event, new_id
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.webhooks.endpoints import disable_endpoint_after_failures, signing_secret, target_url
from core.webhooks.runtime import runtime
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES, next_attempt_at
from core.webhooks.signing import delivery_headers
from core.webhooks.transport import DEADLINE_SECONDS, AttemptOutcome

# Deliveries leased at once by one worker; the lease outlasts a whole batch of 10 s attempts.
CLAIM_BATCH = 16
LEASE = timedelta(seconds=DEADLINE_SECONDS * (CLAIM_BATCH + 4))
# A drain stops claiming new batches after this long, so one job never runs for ever.
DRAIN_TIME_BUDGET = 20.0
EPOCH = datetime(1970, 1, 1)


@dataclass(frozen=True)
class AttemptReport:
    delivery_id: str
    status: str  # the delivery's status after the attempt
    outcome: AttemptOutcome


@dataclass(frozen=True)
class DrainResult:
    attempts: list[AttemptReport]
    more_due: bool  # the time budget ran out before the due deliveries did


def event_body(event: Event) -> bytes:
    """The exact request body: the spec's envelope, compact JSON, UTF-8."""
    return json.dumps(envelope(event), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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
    url: str  # where to send, with the real query string
    shown_url: str  # what the attempt records: the query values masked
    secret: str
    body: bytes
    event_id: str
    event_type: str
    institution_id: str
    event_occurred_at: datetime  # when the event was committed (delivery latency is counted from it)
    endpoint_failures: int  # the endpoint's consecutive failures when the batch was loaded


def claim_due(now: datetime, limit: int = CLAIM_BATCH) -> tuple[str, list[str]]:
    """Lease up to `limit` due, unclaimed deliveries (oldest first); returns (lease token, their ids).

    The batch is picked once, in a materialised CTE, and the UPDATE joins it: written as
    `id IN (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)`, PostgreSQL may plan a nested loop that re-runs the
    subquery for every row scanned, each run skipping what the previous ones had just leased, and so lease
    the whole backlog under one token.
    """
    token = secrets.token_hex(8)
    _without_waiting_for_disk()
    picked = (
        select(WebhookDelivery.id)
        .where(
            WebhookDelivery.status.in_(SENDABLE_STATUSES),
            WebhookDelivery.next_attempt_at <= now,
            or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now),
        )
        .order_by(WebhookDelivery.next_attempt_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("picked")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    claimed = list(db.session.scalars(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id == picked.c.id,
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
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.created_at)
    ).all()
    prepared = []
    for delivery, event, endpoint in rows:
        if not endpoint.enabled:
            delivery.status = "endpoint_disabled"
            delivery.next_attempt_at = delivery.lease_token = delivery.lease_expires_at = None
            continue
        prepared.append(PreparedAttempt(
            delivery_id=delivery.id, endpoint_id=endpoint.id, number=delivery.attempts + 1,
            url=target_url(endpoint), shown_url=endpoint.url,
            secret=signing_secret(endpoint), body=event_body(event), event_id=event.id, event_type=event.type,
            institution_id=event.institution_id, event_occurred_at=event.occurred_at,
            endpoint_failures=endpoint.consecutive_failures,
        ))
    db.session.commit()  # no transaction stays open while requests are in flight
    return prepared


def _still_ours(attempts: list[PreparedAttempt], token: str) -> list[PreparedAttempt]:
    """Those whose lease is still held and whose endpoint is still enabled (another worker may have
    disabled it since the batch was loaded)."""
    if not attempts:
        return []
    owned = set(db.session.scalars(
        select(WebhookDelivery.id)
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .where(WebhookDelivery.id.in_([a.delivery_id for a in attempts]), WebhookDelivery.lease_token == token,
               WebhookEndpoint.enabled.is_(True))
    ))
    db.session.commit()
    return [a for a in attempts if a.delivery_id in owned]


def _post(attempt: PreparedAttempt, transport) -> tuple[PreparedAttempt, datetime, AttemptOutcome]:
    """Sign and send; runs in a sender thread and touches no database session."""
    attempted_at = runtime.clock.now()
    headers = delivery_headers(secret=attempt.secret, timestamp=unix_seconds(attempted_at), body=attempt.body,
                               event_id=attempt.event_id, event_type=attempt.event_type,
                               institution_id=attempt.institution_id)
    outcome = transport.post(attempt.url, headers, attempt.body)
    return attempt, attempted_at, _masked(outcome, attempt)


def _masked(outcome: AttemptOutcome, attempt: PreparedAttempt) -> AttemptOutcome:
    """The outcome with the URL's secret query string removed from its error text (connection errors
    quote the URL)."""
    query = urlsplit(attempt.url).query
    if not query or not outcome.error or query not in outcome.error:
        return outcome
    return replace(outcome, error=outcome.error.replace(query, urlsplit(attempt.shown_url).query))


def _send_batch(attempts: list[PreparedAttempt], token: str) -> list[AttemptReport]:
    """Send a claimed batch: concurrently where the endpoint cannot reach the disable threshold even if
    every request fails, one at a time (stopping when it is disabled) where it could."""
    by_endpoint: dict[str, list[PreparedAttempt]] = {}
    for attempt in attempts:
        by_endpoint.setdefault(attempt.endpoint_id, []).append(attempt)
    concurrent, one_by_one = [], []
    for group in by_endpoint.values():
        if group[0].endpoint_failures + len(group) <= DISABLE_AFTER_CONSECUTIVE_FAILURES:
            concurrent.extend(group)
        else:
            one_by_one.append(group)

    transport = runtime.transport()
    reports = []
    if len(concurrent) == 1:
        reports += _record([_post(concurrent[0], transport)], token)
    elif concurrent:
        futures = [runtime.senders().submit(_post, attempt, transport) for attempt in concurrent]
        reports += _record([future.result() for future in as_completed(futures)], token)
    for group in one_by_one:
        for attempt in group:
            if not _still_ours([attempt], token):
                break
            [report] = _record([_post(attempt, transport)], token)
            reports.append(report)
            if report.status == "endpoint_disabled":
                break
    return reports


def drain_due_deliveries(time_budget: float = DRAIN_TIME_BUDGET) -> DrainResult:
    """Claim and attempt due deliveries, a batch at a time, until none is due or the time budget is spent."""
    started = time.monotonic()
    reports: list[AttemptReport] = []
    while time.monotonic() - started < time_budget:
        token, ids = claim_due(runtime.clock.now())
        if not ids:
            return DrainResult(reports, more_due=False)
        reports.extend(_send_batch(_still_ours(_prepare(ids), token), token))
    return DrainResult(reports, more_due=True)


def unix_seconds(naive_utc: datetime) -> int:
    return int((naive_utc - EPOCH).total_seconds())


def _record(sent: list[tuple[PreparedAttempt, datetime, AttemptOutcome]], token: str) -> list[AttemptReport]:
    """Record a batch of attempts (in the order they completed) in one transaction.

    Each delivery moves to delivered, retry_scheduled or dead; each endpoint's consecutive failures are
    updated atomically (reset by a success, then counting the failures after it) and at the threshold the
    endpoint is disabled, which marks its unsent deliveries `endpoint_disabled`.
    """
    now = runtime.clock.now()
    _without_waiting_for_disk()
    connection = db.session.connection()
    attempts_table, deliveries, endpoints = (WebhookAttempt.__table__, WebhookDelivery.__table__,
                                             WebhookEndpoint.__table__)
    connection.execute(insert(attempts_table), [{
        "id": new_id("wha"), "delivery_id": attempt.delivery_id, "number": attempt.number, "url": attempt.shown_url,
        "attempted_at": attempted_at, "duration_ms": outcome.duration_ms, "response_code": outcome.status_code,
        "error_class": outcome.error_class, "error": outcome.error, "response_excerpt": outcome.body_excerpt,
        "request_headers": outcome.request_headers, "response_headers": outcome.response_headers,
    } for attempt, attempted_at, outcome in sent])

    statuses: dict[str, str] = {}
    rows = []
    tail_failures: dict[str, int] = {}  # per endpoint: failures after its last success in this batch
    succeeded: set[str] = set()
    for attempt, attempted_at, outcome in sent:
        if outcome.delivered:
            status, following, delivered_at = "delivered", None, now
            succeeded.add(attempt.endpoint_id)
            tail_failures[attempt.endpoint_id] = 0
        else:
            following = next_attempt_at(attempt.number, attempted_at)
            status, delivered_at = ("retry_scheduled" if following is not None else "dead"), None
            tail_failures[attempt.endpoint_id] = tail_failures.get(attempt.endpoint_id, 0) + 1
        statuses[attempt.delivery_id] = status
        rows.append({
            "b_id": attempt.delivery_id, "b_token": token, "status": status, "attempts": attempt.number,
            "last_response_code": outcome.status_code, "last_error_class": outcome.error_class,
            "next_attempt_at": following, "delivered_at": delivered_at, "lease_token": None,
            "lease_expires_at": None, "updated_at": now,
        })
    connection.execute(
        update(deliveries)
        .where(deliveries.c.id == bindparam("b_id"), deliveries.c.lease_token == bindparam("b_token"))
        .values({name: bindparam(name) for name in rows[0] if not name.startswith("b_")}),
        rows,
    )

    for endpoint_id, failures in tail_failures.items():
        if failures == 0:
            connection.execute(update(endpoints).where(endpoints.c.id == endpoint_id,
                                                       endpoints.c.consecutive_failures != 0)
                               .values(consecutive_failures=0))
            continue
        counted = failures if endpoint_id in succeeded else endpoints.c.consecutive_failures + failures
        total = connection.execute(
            update(endpoints).where(endpoints.c.id == endpoint_id).values(consecutive_failures=counted)
            .returning(endpoints.c.consecutive_failures)
        ).scalar_one()
        if total >= DISABLE_AFTER_CONSECUTIVE_FAILURES and disable_endpoint_after_failures(endpoint_id, now):
            for attempt, _, _ in sent:
                if attempt.endpoint_id == endpoint_id and statuses[attempt.delivery_id] == "retry_scheduled":
                    statuses[attempt.delivery_id] = "endpoint_disabled"
    db.session.commit()
    for attempt, _, outcome in sent:
        WEBHOOK_ATTEMPTS.labels(statuses[attempt.delivery_id], outcome.error_class or "none").inc()
        if outcome.delivered:
            WEBHOOK_DELIVERY_LATENCY.observe(max(0.0, (now - attempt.event_occurred_at).total_seconds()))
    return [AttemptReport(attempt.delivery_id, statuses[attempt.delivery_id], outcome) for attempt, _, outcome in sent]
