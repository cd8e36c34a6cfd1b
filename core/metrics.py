"""Prometheus metrics: the counters and histograms the code increments, and gauges read from the database."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, select

from core.db import db
from core.models.messages import Message
from core.models.webhooks import SENDABLE_STATUSES, WebhookDelivery
from core.webhooks.runtime import runtime

# Requests (labelled by the Flask endpoint name, never the raw path, so the label set stays small)
HTTP_REQUESTS = Counter("karibu_http_requests_total", "HTTP requests answered, by endpoint, method and status",
                        ["endpoint", "method", "status"])
HTTP_LATENCY = Histogram("karibu_http_request_duration_seconds", "Time to answer an HTTP request",
                         ["endpoint", "method"],
                         buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
RATE_LIMIT_REFUSALS = Counter("karibu_rate_limit_refusals_total", "Requests refused with 429 by a rate limit",
                              ["endpoint"])

# Webhooks (incremented by the worker)
WEBHOOK_ATTEMPTS = Counter("karibu_webhook_attempts_total",
                           "Webhook delivery attempts by the delivery's resulting status and the error class",
                           ["outcome", "error_class"])
WEBHOOK_DELIVERY_LATENCY = Histogram(
    "karibu_webhook_delivery_latency_seconds",
    "From the event's commit to the receiver's 2xx acknowledgement (retries included)",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 3 * 24 * 3600))

# Workers (incremented while a worker waits out an outage)
WORKER_CONNECTION_FAILURES = Counter("karibu_worker_connection_failures_total",
                                     "Failed attempts of a worker to reach a dependency (redis or database)",
                                     ["dependency"])

# Record verification
VERIFICATION_LOOKUPS = Counter("karibu_verification_lookups_total",
                               "Verification lookups by registry, mode (live or trial) and outcome",
                               ["registry", "mode", "outcome"])
REGISTRY_LATENCY = Histogram("karibu_registry_request_duration_seconds",
                             "Time a live registry lookup took (answered or not)", ["registry"],
                             buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 15))


@dataclass(frozen=True)
class TableGauge:
    """A gauge whose samples are `(label values…, value)` rows that `query()` reads at scrape time."""

    name: str
    documentation: str
    labels: tuple[str, ...]
    query: Callable[[], Iterable[tuple]]


def count_by(column, *conditions) -> Callable[[], Iterable[tuple]]:
    """Rows of `(value of column, count)` for a table, optionally filtered."""
    def query():
        return db.session.execute(select(column, func.count()).where(*conditions).group_by(column)).all()
    return query


def _messages_by_status() -> Iterable[tuple]:
    return db.session.execute(select(Message.status, Message.channel, func.count())
                              .group_by(Message.status, Message.channel)).all()


def _oldest_due_delivery_age() -> Iterable[tuple]:
    now = runtime.clock.now()
    oldest: datetime | None = db.session.scalar(
        select(func.min(WebhookDelivery.next_attempt_at))
        .where(WebhookDelivery.status.in_(SENDABLE_STATUSES), WebhookDelivery.next_attempt_at <= now))
    return [((now - oldest).total_seconds() if oldest is not None else 0.0,)]


def _due_deliveries() -> Iterable[tuple]:
    now = runtime.clock.now()
    return [(db.session.scalar(select(func.count()).select_from(WebhookDelivery).where(
        WebhookDelivery.status.in_(SENDABLE_STATUSES), WebhookDelivery.next_attempt_at <= now)),)]


TABLE_GAUGES: list[TableGauge] = [
    TableGauge("karibu_webhook_queue_depth", "Webhook deliveries still to send, by status", ("status",),
               count_by(WebhookDelivery.status, WebhookDelivery.status.in_(SENDABLE_STATUSES))),
    TableGauge("karibu_webhook_due_deliveries", "Webhook deliveries whose next attempt is due now", (),
               _due_deliveries),
    TableGauge("karibu_webhook_oldest_due_delivery_age_seconds",
               "How long the oldest due webhook delivery has waited past its due time (0 when none)", (),
               _oldest_due_delivery_age),
    TableGauge("karibu_messages", "Messages to applicants (email and SMS) by status and channel",
               ("status", "channel"), _messages_by_status),
]


class DatabaseCollector:
    """Yields every `TABLE_GAUGES` entry; a gauge whose query fails is left out (the scrape still works)."""

    def __init__(self, on_error: Callable[[TableGauge, Exception], None] | None = None):
        self.on_error = on_error

    def collect(self):
        for gauge in TABLE_GAUGES:
            family = GaugeMetricFamily(gauge.name, gauge.documentation, labels=list(gauge.labels))
            try:
                rows = list(gauge.query())
            except Exception as error:  # noqa: BLE001 - a broken database must not break the scrape
                db.session.rollback()
                if self.on_error:
                    self.on_error(gauge, error)
                continue
            for *label_values, value in rows:
                family.add_metric([str(v) for v in label_values], float(value or 0))
            yield family
        db.session.commit()  # end the read transaction: a scrape never holds a snapshot open


# Outbox circuits (core/outbox/circuit.py), per transport kind: smtp, sms, webhook (incremented by the worker)
OUTBOX_CIRCUITS_OPEN = Gauge("karibu_outbox_circuits_open",
                             "Transports (SMTP server, SMS gateway, webhook endpoints) found down and probed",
                             ["kind"], multiprocess_mode="livesum")
OUTBOX_CIRCUITS_OPENED = Counter("karibu_outbox_circuits_opened_total",
                                 "Times a transport was found down (its circuit opened)", ["kind"])
OUTBOX_DEFERRED = Counter("karibu_outbox_deferred_total",
                          "Rows put back without counting an attempt because their transport was down", ["kind"])
OUTBOX_ROW_FAILURES = Counter("karibu_outbox_row_failures_total",
                              "Rows whose load, send or record raised, recorded as a failed attempt of that row alone "
                              "(core/outbox/drain.py `Failed`)", ["outbox", "step"])
