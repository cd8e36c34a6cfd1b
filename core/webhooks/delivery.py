"""Delivery attempts: claim due deliveries, sign and POST outside any transaction, record each outcome.

The claim is a lease (core/outbox/leases.py): only one worker can own a due delivery at a time, and a
killed worker's lease lapses so the sweep can hand the delivery to another. Failures move the delivery
along the retry schedule and count towards the endpoint's consecutive failures.

A drain is a pipeline, not a series of batches: each of the worker's sender slots takes the next due
delivery as soon as its previous attempt finishes, so a slow receiver holds one slot, never the others.
One transaction per turn of the loop records what finished since the last turn and claims as many due
deliveries as there are free slots.
"""

from __future__ import annotations

import queue
import secrets
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import bindparam, insert, select, update

from core.events.emission import event_body
from core.db import db
from core.metrics import WEBHOOK_ATTEMPTS, WEBHOOK_DELIVERY_LATENCY
from core.models import Event, new_id
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.outbox.leases import Outbox, claim, lease, without_waiting_for_disk
from core.webhooks.endpoints import disable_endpoint_after_failures, signing_secret, target_url
from core.webhooks.runtime import SENDER_THREADS, runtime
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES, SCHEDULE, next_attempt_at
from core.webhooks.signing import delivery_headers
from core.webhooks.transport import DEADLINE_SECONDS, AttemptOutcome

# What `claim_due` leases at most by default. A drain holds up to two per sender slot (one being sent, one
# queued behind it) and leases only what it can start.
CLAIM_BATCH = SENDER_THREADS
# The lease outlasts a claimed attempt's wait behind 10 s attempts plus its own 10 s, many times over.
LEASE = timedelta(seconds=DEADLINE_SECONDS * (CLAIM_BATCH + 4))
# A drain stops claiming after this long (it still finishes what it sent), so one job never runs for ever.
DRAIN_TIME_BUDGET = 20.0
# While some slots are busy and nothing was due, a drain looks for newly due deliveries this often.
POLL_SECONDS = 0.25
EPOCH = datetime(1970, 1, 1)

DELIVERIES = Outbox(
    model=WebhookDelivery, sendable=SENDABLE_STATUSES, order=(WebhookDelivery.next_attempt_at,), lease=LEASE,
    schedule=SCHEDULE, succeeded="delivered", given_up="dead", now=lambda: runtime.clock.now(),
)


@dataclass(frozen=True)
class AttemptReport:
    delivery_id: str
    status: str  # the delivery's status after the attempt
    outcome: AttemptOutcome


@dataclass(frozen=True)
class DrainResult:
    attempts: list[AttemptReport]
    more_due: bool  # the time budget ran out before the due deliveries did


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
    token: str  # the lease under which it was claimed


def claim_due(now: datetime, limit: int = CLAIM_BATCH) -> tuple[str, list[str]]:
    """Lease up to `limit` due, unclaimed deliveries (oldest first) and commit; returns (lease token, ids)."""
    claimed = claim(DELIVERIES, now, limit)
    return claimed.token, claimed.ids


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


def _load(ids: list[str], token: str, targets: _Targets) -> tuple[list[PreparedAttempt], dict[str, int]]:
    """What the claimed deliveries need, oldest first, and each endpoint's consecutive failures; those whose
    endpoint is disabled are recorded as skipped (in the current transaction)."""
    if not ids:
        return [], {}
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
    prepared, failures, skipped = [], {}, []
    for row in rows:
        if not row.enabled:
            skipped.append(row.id)
            continue
        failures[row.endpoint_id] = row.consecutive_failures
        event = row.Event
        target = targets.of(row)
        prepared.append(PreparedAttempt(
            delivery_id=row.id, endpoint_id=row.endpoint_id, number=row.attempts + 1, url=target.url,
            shown_url=row.url, secret=target.secret, body=event_body(event), event_id=event.id,
            event_type=event.type, institution_id=event.institution_id, event_occurred_at=event.occurred_at,
            token=token,
        ))
    if skipped:
        db.session.execute(
            update(WebhookDelivery).where(WebhookDelivery.id.in_(skipped))
            .values(status="endpoint_disabled", next_attempt_at=None, lease_token=None, lease_expires_at=None)
        )
    return prepared, failures


def _still_ours(attempts: list[PreparedAttempt]) -> set[str]:
    """Ids of those whose lease is still held and whose endpoint is still enabled (another worker may have
    disabled it since they were claimed)."""
    if not attempts:
        return set()
    return set(db.session.scalars(
        select(WebhookDelivery.id)
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .where(WebhookDelivery.id.in_([a.delivery_id for a in attempts]),
               WebhookDelivery.lease_token.in_({a.token for a in attempts}),
               WebhookEndpoint.enabled.is_(True))
    ))


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


class _Pipeline:
    """One drain: keeps every sender slot busy with the oldest due deliveries until the budget is spent.

    An endpoint's attempts run concurrently only while they cannot take it past the disable threshold even
    if all of them fail (known failures + attempts in flight); beyond that they wait, are checked again
    (still leased, endpoint still enabled) and go one at a time, so exactly the 20th failure disables it.
    """

    def __init__(self, slots: int, on_backlog: Callable[[], None] | None):
        # Attempts handed to the sender threads: one per slot, and as many queued behind them, so a slot that
        # finishes starts the next attempt at once, without waiting for this thread's next database turn.
        self.capacity = 2 * slots
        self.on_backlog = on_backlog
        self.transport = runtime.transport()
        self.senders = runtime.senders()
        self.token = secrets.token_hex(8)
        self.targets = _Targets()
        self.finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self.in_flight: dict[str, int] = {}  # per endpoint
        self.failures: dict[str, int] = {}  # per endpoint, as last read or recorded
        self.waiting: list[PreparedAttempt] = []  # claimed, held back near their endpoint's threshold
        self.reports: list[AttemptReport] = []

    @property
    def busy(self) -> int:
        return sum(self.in_flight.values())

    def run(self, time_budget: float) -> DrainResult:
        started = time.monotonic()
        nothing_due_since: float | None = None  # when a claim last found fewer due deliveries than it asked
        done: list = []
        while True:
            claiming = time.monotonic() - started < time_budget
            free = self.capacity - self.busy - len(self.waiting) if claiming else 0
            if nothing_due_since is not None and time.monotonic() - nothing_due_since < POLL_SECONDS:
                free = 0  # nothing was due a moment ago: look again only after a short pause
            checked, claimed, leased = self._turn(done, free)
            if free > 0:
                if leased < free:
                    nothing_due_since = time.monotonic()
                else:
                    nothing_due_since = None
                    self._wake_another()
            for attempt in checked:
                self._start(attempt)
            for attempt in claimed:
                if self._may_start(attempt) and not self._waiting_for(attempt.endpoint_id):
                    self._start(attempt)
                else:
                    self.waiting.append(attempt)
            if not self.busy and not self.waiting:
                if nothing_due_since is not None or not claiming:
                    return DrainResult(self.reports, more_due=not claiming and nothing_due_since is None)
                done = []
                continue
            if not self.busy:
                done = []  # only held attempts are left: check them again at once
                continue
            # while claiming, wake up now and then to fill free slots with deliveries that came due
            done = self._collect(timeout=POLL_SECONDS if claiming else None)

    def _turn(self, done: list, free: int) -> tuple[list[PreparedAttempt], list[PreparedAttempt], int]:
        """One transaction: record the finished attempts, check the held ones that may go now, claim up to
        `free` due deliveries. Returns (held attempts to start, newly claimed ones to send, how many were
        leased, skipped ones included)."""
        if not done and free <= 0 and not self.waiting:
            return [], [], 0
        without_waiting_for_disk()
        statuses, totals = _record(done) if done else ({}, {})
        self.failures.update(totals)
        ready = self._ready_to_recheck()
        ours = _still_ours(ready)
        ids = lease(DELIVERIES, runtime.clock.now(), free, self.token) if free > 0 else []
        claimed, failures = _load(ids, self.token, self.targets)
        db.session.commit()
        _count(done, statuses)
        self.failures.update(failures)
        self.reports.extend(AttemptReport(attempt.delivery_id, statuses[attempt.delivery_id], outcome)
                            for attempt, _, outcome in done)
        # held attempts no longer ours (endpoint disabled, lease lapsed) are dropped
        rechecked = {attempt.delivery_id for attempt in ready}
        self.waiting = [attempt for attempt in self.waiting if attempt.delivery_id not in rechecked]
        return [attempt for attempt in ready if attempt.delivery_id in ours], claimed, len(ids)

    def _ready_to_recheck(self) -> list[PreparedAttempt]:
        """Held attempts that may start now, oldest first per endpoint. With nothing in flight for its
        endpoint, an endpoint's oldest held attempt is always checked again (the check decides)."""
        ready: list[PreparedAttempt] = []
        blocked: set[str] = set()
        for attempt in self.waiting:
            endpoint = attempt.endpoint_id
            if endpoint in blocked:
                continue
            in_flight = self.in_flight.get(endpoint, 0) + sum(1 for other in ready if other.endpoint_id == endpoint)
            if not in_flight or self.failures.get(endpoint, 0) + in_flight < DISABLE_AFTER_CONSECUTIVE_FAILURES:
                ready.append(attempt)
            else:
                blocked.add(endpoint)  # its later attempts wait their turn
        return ready

    def _may_start(self, attempt: PreparedAttempt) -> bool:
        known = self.failures.get(attempt.endpoint_id, 0)
        return known + self.in_flight.get(attempt.endpoint_id, 0) < DISABLE_AFTER_CONSECUTIVE_FAILURES

    def _waiting_for(self, endpoint_id: str) -> bool:
        return any(attempt.endpoint_id == endpoint_id for attempt in self.waiting)

    def _start(self, attempt: PreparedAttempt) -> None:
        self.in_flight[attempt.endpoint_id] = self.in_flight.get(attempt.endpoint_id, 0) + 1
        future = self.senders.submit(_post, attempt, self.transport)
        future.add_done_callback(self.finished.put)

    def _collect(self, timeout: float | None) -> list:
        """Wait for one attempt to finish (or the poll timeout), then take every other finished one."""
        futures = []
        try:
            futures.append(self.finished.get(timeout=timeout))
            while True:
                futures.append(self.finished.get_nowait())
        except queue.Empty:
            pass
        done = [future.result() for future in futures]
        for attempt, _, _ in done:
            self.in_flight[attempt.endpoint_id] -= 1
            if not self.in_flight[attempt.endpoint_id]:
                del self.in_flight[attempt.endpoint_id]
        return done

    def _wake_another(self) -> None:
        """A claim found as many due deliveries as it asked for: a backlog, so another worker may help."""
        if self.on_backlog is not None:
            self.on_backlog()
            self.on_backlog = None  # once per drain; the drain it wakes wakes the next one


def drain_due_deliveries(time_budget: float = DRAIN_TIME_BUDGET,
                         on_backlog: Callable[[], None] | None = None) -> DrainResult:
    """Attempt due deliveries, every sender slot taking the next one as soon as it is free, until none is
    due or the time budget is spent. `on_backlog` is called (once) when more is due than this drain can
    start at once."""
    return _Pipeline(SENDER_THREADS, on_backlog).run(time_budget)


def unix_seconds(naive_utc: datetime) -> int:
    return int((naive_utc - EPOCH).total_seconds())


def _record(sent: list[tuple[PreparedAttempt, datetime, AttemptOutcome]]
            ) -> tuple[dict[str, str], dict[str, int]]:
    """Record attempts (in the order they completed) in the current transaction; the caller commits.

    Each delivery moves to delivered, retry_scheduled or dead; each endpoint's consecutive failures are
    updated atomically (reset by a success, then counting the failures after it) and at the threshold the
    endpoint is disabled, which marks its unsent deliveries `endpoint_disabled`. Returns each delivery's
    new status and each endpoint's consecutive failures.
    """
    now = runtime.clock.now()
    connection = db.session.connection()
    deliveries, endpoints = WebhookDelivery.__table__, WebhookEndpoint.__table__
    connection.execute(insert(WebhookAttempt.__table__),
                       [attempt_row(attempt, attempted_at, outcome) for attempt, attempted_at, outcome in sent])

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
            "b_id": attempt.delivery_id, "b_token": attempt.token, "status": status, "attempts": attempt.number,
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

    totals: dict[str, int] = {}
    for endpoint_id, failures in tail_failures.items():
        if failures == 0:
            connection.execute(update(endpoints).where(endpoints.c.id == endpoint_id,
                                                       endpoints.c.consecutive_failures != 0)
                               .values(consecutive_failures=0))
            totals[endpoint_id] = 0
            continue
        counted = failures if endpoint_id in succeeded else endpoints.c.consecutive_failures + failures
        total = totals[endpoint_id] = connection.execute(
            update(endpoints).where(endpoints.c.id == endpoint_id).values(consecutive_failures=counted)
            .returning(endpoints.c.consecutive_failures)
        ).scalar_one()
        if total >= DISABLE_AFTER_CONSECUTIVE_FAILURES and disable_endpoint_after_failures(endpoint_id, now):
            for attempt, _, _ in sent:
                if attempt.endpoint_id == endpoint_id and statuses[attempt.delivery_id] == "retry_scheduled":
                    statuses[attempt.delivery_id] = "endpoint_disabled"
    return statuses, totals


def attempt_row(attempt: PreparedAttempt, attempted_at: datetime, outcome: AttemptOutcome) -> dict:
    """The `webhook_attempts` row of one attempt (the one place an attempt's record is built)."""
    return {
        "id": new_id("wha"), "delivery_id": attempt.delivery_id, "number": attempt.number, "url": attempt.shown_url,
        "attempted_at": attempted_at, "duration_ms": outcome.duration_ms, "response_code": outcome.status_code,
        "error_class": outcome.error_class, "error": outcome.error, "response_excerpt": outcome.body_excerpt,
        "request_headers": outcome.request_headers, "response_headers": outcome.response_headers,
    }


def _count(sent: list[tuple[PreparedAttempt, datetime, AttemptOutcome]], statuses: dict[str, str]) -> None:
    """Metrics of committed attempts."""
    now = runtime.clock.now()
    for attempt, _, outcome in sent:
        WEBHOOK_ATTEMPTS.labels(statuses[attempt.delivery_id], outcome.error_class or "none").inc()
        if outcome.delivered:
            WEBHOOK_DELIVERY_LATENCY.observe(max(0.0, (now - attempt.event_occurred_at).total_seconds()))
