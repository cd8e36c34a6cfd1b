"""The delivery log (newest first, filterable by status), redeliver, recover and the test ping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from core.errors import Conflict, InvalidInput
from core.events.emission import emit_webhook_test, event_body
from core.db import db
from core.models import Event
from core.models.webhooks import DELIVERY_STATUSES, WebhookAttempt, WebhookDelivery
from core.paging import KeysetPage
from core.scoping import InstitutionScope
from core.webhooks.endpoints import require_endpoint
from core.webhooks.outbox import drain_signal
from core.webhooks.runtime import runtime

MAX_LOG_LIMIT = 200
# Deliveries that `recover` sends again: failing, dead, or skipped while the endpoint was disabled.
RECOVERABLE_STATUSES = ("retry_scheduled", "dead", "endpoint_disabled")


def list_deliveries(scope: InstitutionScope, status: str | None = None, *, limit: int = 50,
                    before: str | None = None) -> KeysetPage[WebhookDelivery]:
    """Deliveries of the institution, newest first, optionally only those with `status`."""
    if status is not None and status not in DELIVERY_STATUSES:
        raise InvalidInput(f"status must be one of: {', '.join(DELIVERY_STATUSES)}", field="status")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LOG_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LOG_LIMIT}", field="limit")
    query = scope.select(WebhookDelivery)
    if status is not None:
        query = query.where(WebhookDelivery.status == status)
    if before is not None:
        anchor = scope.get(WebhookDelivery, before)
        if anchor is None:
            raise InvalidInput("before must be the id of a delivery of this institution", field="before")
        query = query.where(
            (WebhookDelivery.created_at < anchor.created_at)
            | ((WebhookDelivery.created_at == anchor.created_at) & (WebhookDelivery.id < anchor.id))
        )
    rows = list(db.session.scalars(
        query.order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc()).limit(limit + 1)
    ))
    return KeysetPage.of(rows, limit)


def get_delivery_with_attempts(scope: InstitutionScope, delivery_id: str
                               ) -> tuple[WebhookDelivery, list[WebhookAttempt]]:
    """One delivery of the institution and its attempts, oldest first. NotFound for a foreign id."""
    delivery = scope.require(WebhookDelivery, delivery_id, what="Delivery")
    attempts = list(db.session.scalars(
        select(WebhookAttempt).where(WebhookAttempt.delivery_id == delivery.id).order_by(WebhookAttempt.number)
    ))
    return delivery, attempts


def last_errors(delivery_ids: list[str]) -> dict[str, str]:
    """The error text of each delivery's latest failed attempt, by delivery id (those with none are left out)."""
    latest = (select(WebhookAttempt.delivery_id, func.max(WebhookAttempt.number).label("number"))
              .where(WebhookAttempt.delivery_id.in_(delivery_ids)).group_by(WebhookAttempt.delivery_id).subquery())
    return dict(db.session.execute(
        select(WebhookAttempt.delivery_id, WebhookAttempt.error)
        .join(latest, (latest.c.delivery_id == WebhookAttempt.delivery_id) & (latest.c.number == WebhookAttempt.number))
        .where(WebhookAttempt.error.is_not(None))).all())


@dataclass(frozen=True)
class DeliveryDetail:
    delivery: WebhookDelivery
    attempts: list[WebhookAttempt]
    body: str  # the request body every attempt sent (the envelope of the stored event, byte for byte)
    is_test: bool  # an example event sent from the settings


def get_delivery_detail(scope: InstitutionScope, delivery_id: str) -> DeliveryDetail:
    """A delivery, its attempts and the body they sent. NotFound for a foreign id."""
    delivery, attempts = get_delivery_with_attempts(scope, delivery_id)
    event = db.session.get(Event, delivery.event_id)
    return DeliveryDetail(delivery, attempts, event_body(event).decode("utf-8"), bool(event.is_test))


def require_enabled_endpoint(scope: InstitutionScope):
    endpoint = require_endpoint(scope)
    if not endpoint.enabled:
        raise Conflict("The webhook endpoint is disabled; re-enable it first")
    return endpoint


def redeliver(scope: InstitutionScope, delivery_id: str) -> WebhookDelivery:
    """Queue one more attempt of a delivery now, whatever its status (a delivered one is sent again)."""
    require_enabled_endpoint(scope)
    delivery = scope.require(WebhookDelivery, delivery_id, what="Delivery")
    if delivery.lease_expires_at is not None and delivery.lease_expires_at > runtime.clock.now():
        raise Conflict("The delivery is being attempted right now")
    _make_due(delivery)
    db.session.commit()
    return delivery


def recover_since(scope: InstitutionScope, since: datetime) -> int:
    """Queue again every delivery created since `since` that failed, died or was skipped while the
    endpoint was disabled. Returns how many were queued."""
    if not isinstance(since, datetime):
        raise InvalidInput("since must be a date and time", field="since")
    require_enabled_endpoint(scope)
    deliveries = list(db.session.scalars(
        scope.select(WebhookDelivery)
        .where(WebhookDelivery.status.in_(RECOVERABLE_STATUSES), WebhookDelivery.created_at >= since)
        .order_by(WebhookDelivery.created_at)
    ))
    for delivery in deliveries:
        _make_due(delivery)
    db.session.commit()
    return len(deliveries)


def _make_due(delivery: WebhookDelivery) -> None:
    now = runtime.clock.now()
    delivery.status = "pending"
    delivery.next_attempt_at = now
    delivery.lease_token = delivery.lease_expires_at = None
    drain_signal.after_commit()


def send_test_ping(scope: InstitutionScope) -> WebhookDelivery:
    """Queue a `webhook.test` event to the configured URL (always delivered, whatever the subscription)."""
    require_enabled_endpoint(scope)
    event = emit_webhook_test(scope)
    db.session.commit()
    return db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == event.id)).one()

