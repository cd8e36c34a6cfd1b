"""The webhook outbox kind (`DeliveryKind`): a delivery is its event's body, signed and POSTed to the endpoint;
a 2xx is delivered, anything else a failure that counts towards the endpoint's disable threshold (docs/webhooks.md).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import case, func, insert, select, update

from core.db import db
from core.events.emission import event_body
from core.metrics import WEBHOOK_ATTEMPTS, WEBHOOK_DELIVERY_LATENCY
from core.models import Event, new_id
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.outbox.circuit import Deferred
from core.outbox.drain import SUCCEEDED, TEMPORARY, Drain, DrainResult, Failed, Sent
from core.outbox.leases import Outbox
from core.webhooks.endpoints import disable_endpoint_after_failures, signing_secret, target_url
from core.webhooks.runtime import SENDER_THREADS, runtime
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES, SCHEDULE
from core.webhooks.signing import delivery_headers
from core.webhooks.transport import AttemptOutcome

# What one claim leases at most. A drain holds up to two per sender slot (one being sent, one queued behind it)
# and leases only what it can start.
CLAIM_BATCH = SENDER_THREADS
# Renewed every fifth of it while the drain works (core/outbox/drain.py), so a claimed attempt's wait behind 10 s
# attempts plus its own 10 s never outlasts it; after a killed worker its deliveries are free again this soon.
LEASE = timedelta(seconds=45)
# The most of a drain's sender slots (in flight or held behind them) one endpoint may hold.
ENDPOINT_SLOTS = SENDER_THREADS // 2
# A drain stops claiming after this long (it still finishes what it sent), so one job never runs for ever.
DRAIN_TIME_BUDGET = 20.0
EPOCH = datetime(1970, 1, 1)

DELIVERIES = Outbox(
    model=WebhookDelivery, sendable=SENDABLE_STATUSES, order=(WebhookDelivery.next_attempt_at,), lease=LEASE,
    schedule=SCHEDULE, succeeded="delivered", given_up="dead", now=lambda: runtime.clock.now(),
)


@dataclass(frozen=True)
class PreparedAttempt:
    id: str  # the delivery's
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
    livemode: bool = True  # False for an event of a sandbox (`X-Karibu-Mode: test`)


@dataclass(frozen=True)
class _EndpointTarget:
    url: str
    secret: str


class _Targets:
    """Decrypted URL and secret per endpoint, for one drain; a rotation or URL change is seen at once
    because the cache is keyed by the ciphertexts read with each claim."""

    def __init__(self):
        self._known: dict[tuple, _EndpointTarget] = {}

    def of(self, endpoint) -> _EndpointTarget:
        """`endpoint`: a row with the endpoint's `endpoint_id`, `url` and ciphertexts."""
        key = (endpoint.endpoint_id, endpoint.url, endpoint.url_query_ciphertext, endpoint.secret_ciphertext)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = _EndpointTarget(target_url(endpoint), signing_secret(endpoint))
        return found


def _masked(outcome: AttemptOutcome, attempt: PreparedAttempt) -> AttemptOutcome:
    """The outcome with the URL's secret query string removed from its error text (connection errors
    quote the URL)."""
    query = urlsplit(attempt.url).query
    if not query or not outcome.error or query not in outcome.error:
        return outcome
    return replace(outcome, error=outcome.error.replace(query, urlsplit(attempt.shown_url).query))


class DeliveryKind:
    """Webhook deliveries as one drain sees them (an `OutboxKind` with `Circuits`, `Shares` per endpoint and
    `Records`): an endpoint's attempts run at once only while they cannot take it past its disable threshold."""

    outbox = DELIVERIES
    # Deliveries committed while a slow receiver holds some slots wait for this poll of the running (endless) drain:
    # a claim every 0.05 s while anything is in flight, a few milliseconds of PostgreSQL each.
    poll_seconds = 0.05

    def __init__(self):
        self.transport = runtime.transport()
        self.targets = _Targets()
        self.failures: dict[str, int] = {}  # per endpoint, as last read or recorded

    def load(self, ids: list[str], lease_expires: datetime) -> list[PreparedAttempt]:
        """What the claimed deliveries need, oldest first, and each endpoint's consecutive failures; those whose
        endpoint is disabled are recorded as skipped."""
        endpoints = WebhookEndpoint.__table__
        rows = db.session.execute(
            select(WebhookDelivery.id, WebhookDelivery.attempts, Event, endpoints.c.id.label("endpoint_id"),
                   endpoints.c.url, endpoints.c.url_query_ciphertext, endpoints.c.secret_ciphertext,
                   endpoints.c.enabled, endpoints.c.consecutive_failures)
            .join(Event, Event.id == WebhookDelivery.event_id)
            .join(endpoints, endpoints.c.id == WebhookDelivery.endpoint_id)
            .where(WebhookDelivery.id.in_(ids))
            .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.created_at)
        ).all()
        prepared, skipped = [], []
        for row in rows:
            if not row.enabled:
                skipped.append(row.id)
                continue
            self.failures[row.endpoint_id] = row.consecutive_failures
            event = row.Event
            target = self.targets.of(row)
            prepared.append(PreparedAttempt(
                id=row.id, endpoint_id=row.endpoint_id, number=row.attempts + 1, url=target.url,
                shown_url=row.url, secret=target.secret, body=event_body(event), event_id=event.id,
                event_type=event.type, institution_id=event.institution_id, event_occurred_at=event.occurred_at,
                livemode=event.livemode is not False,
            ))
        if skipped:
            db.session.execute(
                update(WebhookDelivery).where(WebhookDelivery.id.in_(skipped))
                .values(status="endpoint_disabled", next_attempt_at=None, lease_token=None, lease_expires_at=None)
            )
        return prepared

    def send(self, attempt: PreparedAttempt) -> tuple[datetime, AttemptOutcome]:
        """Sign and POST."""
        attempted_at = runtime.clock.now()
        headers = delivery_headers(secret=attempt.secret, timestamp=unix_seconds(attempted_at), body=attempt.body,
                                   event_id=attempt.event_id, event_type=attempt.event_type,
                                   institution_id=attempt.institution_id, livemode=attempt.livemode)
        outcome = self.transport.post(attempt.url, headers, attempt.body)
        return attempted_at, _masked(outcome, attempt)

    def answer(self, attempt: PreparedAttempt, outcome: AttemptOutcome, now: datetime) -> tuple[str, dict]:
        """A 2xx in time is delivered; anything else is a failure to retry."""
        return (SUCCEEDED if outcome.delivered else TEMPORARY), {
            "last_response_code": outcome.status_code, "last_error_class": outcome.error_class,
            "delivered_at": now if outcome.delivered else None,
        }

    def circuit_of(self, attempt: PreparedAttempt) -> str:
        """One circuit per endpoint and URL: a receiver saved under a new address is tried at once, not after
        the old address's probe interval."""
        return f"webhook {attempt.endpoint_id} {hashlib.sha256(attempt.url.encode()).hexdigest()[:16]}"

    def transport_failure(self, outcome: AttemptOutcome) -> str | None:
        """A receiver that cannot be connected to is down for every delivery (core/outbox/circuit.py)."""
        return outcome.error if outcome.error_class == "connection" else None

    def deferred_columns(self, deferred: Deferred) -> dict:
        return {"last_error_class": "connection"}

    def found_down(self, attempts: list[PreparedAttempt]) -> None:
        """The receiver was found down (circuit opened, or a failed probe): one failure of the endpoint each."""
        endpoints = WebhookEndpoint.__table__
        for attempt in attempts:
            total = self.failures[attempt.endpoint_id] = db.session.execute(
                update(endpoints).where(endpoints.c.id == attempt.endpoint_id)
                .values(consecutive_failures=endpoints.c.consecutive_failures + 1)
                .returning(endpoints.c.consecutive_failures)
            ).scalar_one()
            if total >= DISABLE_AFTER_CONSECUTIVE_FAILURES:
                disable_endpoint_after_failures(attempt.endpoint_id, runtime.clock.now())

    def group_of(self, attempt: PreparedAttempt) -> str:
        return attempt.endpoint_id

    def lease_due(self, drain: Drain, now: datetime, limit: int) -> tuple[list[str], bool]:
        """Lease due deliveries fairly across endpoints (`lease_fairly`), none beyond ENDPOINT_SLOTS of this drain
        (counting those it already sends or holds)."""
        taken: dict[str, int] = dict(drain.in_flight)
        for held in drain.held:
            taken[held.endpoint_id] = taken.get(held.endpoint_id, 0) + 1
        leased = lease_fairly(now, limit, drain.token, taken)
        for _, endpoint_id in leased:
            taken[endpoint_id] = taken.get(endpoint_id, 0) + 1
        # an endpoint whose share is now taken may have more due: claim again as soon as a slot frees
        passed_over = len(leased) < limit and any(count >= ENDPOINT_SLOTS for count in taken.values())
        return [delivery_id for delivery_id, _ in leased], passed_over

    def may_start(self, drain: Drain, attempt: PreparedAttempt) -> bool:
        known = self.failures.get(attempt.endpoint_id, 0)
        in_flight = drain.in_flight.get(attempt.endpoint_id, 0)
        return (in_flight < ENDPOINT_SLOTS and known + in_flight < DISABLE_AFTER_CONSECUTIVE_FAILURES
                and not any(held.endpoint_id == attempt.endpoint_id for held in drain.held))

    def resumable(self, drain: Drain) -> list[PreparedAttempt]:
        """Held attempts that may start now, oldest first per endpoint, while their endpoint has a free slot (an
        endpoint's oldest held attempt is always checked again when nothing of it is in flight)."""
        ready: list[PreparedAttempt] = []
        blocked: set[str] = set()
        for attempt in drain.held:
            endpoint = attempt.endpoint_id
            if endpoint in blocked:
                continue
            in_flight = drain.in_flight.get(endpoint, 0) + sum(1 for other in ready if other.endpoint_id == endpoint)
            if in_flight < ENDPOINT_SLOTS and (
                    not in_flight or self.failures.get(endpoint, 0) + in_flight < DISABLE_AFTER_CONSECUTIVE_FAILURES):
                ready.append(attempt)
            else:
                blocked.add(endpoint)  # its later attempts wait their turn
        return ready

    def still_ours(self, drain: Drain, attempts: list[PreparedAttempt]) -> set[str]:
        """Ids of those still leased by `drain` whose endpoint is still enabled (another worker may disable it)."""
        return set(db.session.scalars(
            select(WebhookDelivery.id)
            .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
            .where(WebhookDelivery.id.in_([a.id for a in attempts]),
                   WebhookDelivery.lease_token == drain.token,
                   WebhookEndpoint.enabled.is_(True))
        ))

    def record(self, sent: list[Sent], statuses: dict[str, str]) -> None:
        """Each attempt's `webhook_attempts` row, and each endpoint's consecutive failures (reset by a success,
        then counting the failures after it); at the threshold the endpoint is disabled."""
        now = runtime.clock.now()
        connection = db.session.connection()
        endpoints = WebhookEndpoint.__table__
        connection.execute(insert(WebhookAttempt.__table__),
                           [attempt_row(attempt, attempted_at, outcome) for attempt, attempted_at, outcome in sent])

        tail_failures: dict[str, int] = {}  # per endpoint: failures after its last success in this batch
        succeeded: set[str] = set()
        for attempt, _, outcome in sent:
            if outcome.delivered:
                succeeded.add(attempt.endpoint_id)
                tail_failures[attempt.endpoint_id] = 0
            else:
                tail_failures[attempt.endpoint_id] = tail_failures.get(attempt.endpoint_id, 0) + 1
        for endpoint_id, failures in tail_failures.items():
            if failures == 0:
                connection.execute(update(endpoints).where(endpoints.c.id == endpoint_id,
                                                           endpoints.c.consecutive_failures != 0)
                                   .values(consecutive_failures=0))
                self.failures[endpoint_id] = 0
                continue
            counted = failures if endpoint_id in succeeded else endpoints.c.consecutive_failures + failures
            total = self.failures[endpoint_id] = connection.execute(
                update(endpoints).where(endpoints.c.id == endpoint_id).values(consecutive_failures=counted)
                .returning(endpoints.c.consecutive_failures)
            ).scalar_one()
            if total >= DISABLE_AFTER_CONSECUTIVE_FAILURES and disable_endpoint_after_failures(endpoint_id, now):
                for attempt, _, _ in sent:
                    if attempt.endpoint_id == endpoint_id and statuses[attempt.id] == "retry_scheduled":
                        statuses[attempt.id] = "endpoint_disabled"

    def failed(self, failures: list[Sent], statuses: dict[str, str]) -> None:
        """Each failed row's `webhook_attempts` row, with the reason (an error of Karibu's: not counted against
        the endpoint)."""
        delivery_ids = [attempt if isinstance(attempt, str) else attempt.id for attempt, _, _ in failures]
        shown_urls = dict(db.session.execute(
            select(WebhookDelivery.id, WebhookEndpoint.url)
            .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
            .where(WebhookDelivery.id.in_(delivery_ids))).all())
        numbers = dict(db.session.execute(
            select(WebhookDelivery.id, WebhookDelivery.attempts).where(WebhookDelivery.id.in_(delivery_ids))).all())
        db.session.connection().execute(insert(WebhookAttempt.__table__), [{
            "id": new_id("wha"), "delivery_id": delivery_id, "number": numbers[delivery_id],
            "url": shown_urls.get(delivery_id, ""), "attempted_at": attempted_at, "duration_ms": 0,
            "error_class": "internal", "error": failed.reason,
        } for delivery_id, (_, attempted_at, failed) in zip(delivery_ids, failures)])

    def failed_columns(self, failed: Failed) -> dict:
        return {"last_response_code": None, "last_error_class": "internal"}

    def committed(self, finished: list[Sent], statuses: dict[str, str]) -> None:
        """Metrics of the committed attempts."""
        now = runtime.clock.now()
        for attempt, _, outcome in finished:
            if attempt.id not in statuses or not isinstance(outcome, AttemptOutcome):
                continue  # deferred or failed: not an attempt of the receiver
            WEBHOOK_ATTEMPTS.labels(statuses[attempt.id], outcome.error_class or "none").inc()
            if outcome.delivered:
                WEBHOOK_DELIVERY_LATENCY.observe(max(0.0, (now - attempt.event_occurred_at).total_seconds()))


def drain_due_deliveries(time_budget: float = DRAIN_TIME_BUDGET,
                         on_backlog: Callable[[], None] | None = None,
                         stop: threading.Event | None = None) -> DrainResult:
    """Attempt due deliveries until none is due or the time budget is spent; with `stop` (a lane), until none is due
    or `stop` is set, claiming all along (no receiver's slow tail pauses the others' deliveries: `Drain.run`
    `endless`). `on_backlog` is called (once per time budget) when more is due than this drain can start at once."""
    drain = Drain(DeliveryKind(), runtime.senders(), capacity=2 * SENDER_THREADS, on_backlog=on_backlog)
    return drain.run(time_budget, stop, endless=stop is not None)


def lease_fairly(now: datetime, limit: int, token: str, taken: dict[str, int]) -> list[tuple[str, str]]:
    """Lease up to `limit` due deliveries in the current transaction, each endpoint's oldest in turn and at most
    ENDPOINT_SLOTS per endpoint counting the `taken` ones (per endpoint id); returns (id, endpoint id) pairs."""
    model = WebhookDelivery
    due = DELIVERIES.due(now)
    full = [endpoint for endpoint, count in taken.items() if count >= ENDPOINT_SLOTS]
    ranked = (
        select(model.id, model.endpoint_id, model.next_attempt_at,
               func.row_number().over(partition_by=model.endpoint_id,
                                      order_by=(model.next_attempt_at, model.id)).label("place"))
        .where(*due, model.endpoint_id.not_in(full))
        .subquery("ranked")
    )
    already = {endpoint: count for endpoint, count in taken.items() if 0 < count < ENDPOINT_SLOTS}
    share = ENDPOINT_SLOTS - (case(already, value=ranked.c.endpoint_id, else_=0) if already else 0)
    candidates = (
        select(ranked.c.id, ranked.c.place, ranked.c.next_attempt_at)
        .where(ranked.c.place <= share)
        .order_by(ranked.c.place, ranked.c.next_attempt_at, ranked.c.id)
        .limit(limit)
        .cte("candidates")
    )
    picked = (
        select(model.id)
        .join(candidates, candidates.c.id == model.id)
        .where(*due)
        .with_for_update(skip_locked=True, of=model)
        .cte("picked")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    return [tuple(row) for row in db.session.execute(
        update(model)
        .where(model.id == picked.c.id, *due)
        .values(lease_token=token, lease_expires_at=now + LEASE)
        .returning(model.id, model.endpoint_id)
    )]


def unix_seconds(naive_utc: datetime) -> int:
    return int((naive_utc - EPOCH).total_seconds())


def attempt_row(attempt: PreparedAttempt, attempted_at: datetime, outcome: AttemptOutcome) -> dict:
    """The `webhook_attempts` row of one attempt (the one place an attempt's record is built)."""
    return {
        "id": new_id("wha"), "delivery_id": attempt.id, "number": attempt.number, "url": attempt.shown_url,
        "attempted_at": attempted_at, "duration_ms": outcome.duration_ms, "response_code": outcome.status_code,
        "error_class": outcome.error_class, "error": outcome.error, "response_excerpt": outcome.body_excerpt,
        "request_headers": outcome.request_headers, "response_headers": outcome.response_headers,
    }
