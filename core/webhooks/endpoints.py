"""Endpoint settings: one webhook URL per institution, its event types, options and signing secret."""

from __future__ import annotations

from urllib.parse import urlsplit

from sqlalchemy import delete, select, update

from core.errors import Conflict, InvalidInput, NotFound, problem
from core.db import db
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.scoping import InstitutionScope
from core.webhooks.runtime import runtime, transport_settings
from core.webhooks.signing import generate_secret
from core.webhooks.urls import UnsafeURL, check_url, split_query, with_query

SUBSCRIBABLE_EVENT_TYPES = (
    "application.submitted",
    "application.updated",
    "decision.sent",
    "decision.responded",
    "payment.completed",
)
TEST_EVENT_TYPE = "webhook.test"


def get_endpoint(scope: InstitutionScope) -> WebhookEndpoint | None:
    """The institution's endpoint, or None when it has not configured one."""
    return db.session.scalars(scope.select(WebhookEndpoint)).one_or_none()


def require_endpoint(scope: InstitutionScope) -> WebhookEndpoint:
    endpoint = get_endpoint(scope)
    if endpoint is None:
        raise NotFound("No webhook endpoint is configured for this institution")
    return endpoint


def validate_event_types(events) -> list[str]:
    """The subscribed event types in canonical order; raise InvalidInput naming what is wrong."""
    if isinstance(events, str):
        events = [part.strip() for part in events.split(",") if part.strip()]
    if not isinstance(events, (list, tuple)) or not all(isinstance(e, str) for e in events):
        raise InvalidInput("events must be a list of event types", field="events")
    if not events:
        raise InvalidInput("events must name at least one event type", field="events")
    unknown = [e for e in events if e not in SUBSCRIBABLE_EVENT_TYPES]
    if TEST_EVENT_TYPE in unknown:
        raise InvalidInput("events: webhook.test is always delivered and cannot be subscribed to", field="events")
    if unknown:
        raise InvalidInput(
            f"events: unknown event type {unknown[0]!r}; allowed: {', '.join(SUBSCRIBABLE_EVENT_TYPES)}",
            field="events",
        )
    return [e for e in SUBSCRIBABLE_EVENT_TYPES if e in events]


def validate_url(url) -> str:
    settings = transport_settings()
    if not isinstance(url, str):
        raise InvalidInput("url must be a string", field="url")
    try:
        check_url(url.strip(), allow_private=settings.allow_private, allow_http=settings.allow_http,
                  resolver=runtime.resolver, dev_origin=settings.dev_origin)
    except UnsafeURL as refused:
        message = f"url is not allowed: {refused.reason}"
        raise InvalidInput(message, errors=[problem("body", "url", message, reason=refused.reason)]) from None
    return url.strip()


def save_endpoint(scope: InstitutionScope, url: str, events=None, include_name: bool | None = None
                  ) -> tuple[WebhookEndpoint, str | None]:
    """Create or update the endpoint; returns (endpoint, the new signing secret on creation, else None). `events`
    and `include_name` None keep the current values; a URL with the masked query as shown keeps the stored one."""
    if scope.institution() is None:
        raise NotFound("Institution not found")
    endpoint = get_endpoint(scope)
    clean_url = validate_url(_unmasked(url, endpoint))
    event_types = validate_event_types(events) if events is not None else None
    if include_name is not None and not isinstance(include_name, bool):
        raise InvalidInput("include_name must be true or false", field="include_name")
    new_secret = None
    if endpoint is None:
        new_secret = generate_secret()
        endpoint = WebhookEndpoint(
            institution_id=scope.institution_id,
            event_types=event_types or list(SUBSCRIBABLE_EVENT_TYPES),
            include_applicant_name=bool(include_name),
            enabled=True,
            consecutive_failures=0,
            secret_ciphertext=runtime.secret_box().encrypt(new_secret),
            secret_rotated_at=runtime.clock.now(),
        )
        db.session.add(endpoint)
    else:
        if event_types is not None:
            endpoint.event_types = event_types
        if include_name is not None:
            endpoint.include_applicant_name = include_name
    endpoint.url, query = split_query(clean_url)
    endpoint.url_query_ciphertext = runtime.secret_box().encrypt(query) if query else None
    db.session.commit()
    return endpoint, new_secret


def _unmasked(url, endpoint: WebhookEndpoint | None):
    """`url` with the stored query string put back when it carries the endpoint's masked query unchanged."""
    if not isinstance(url, str) or endpoint is None or endpoint.url_query_ciphertext is None:
        return url
    try:
        given_query = urlsplit(url.strip()).query
    except ValueError:
        return url  # validate_url says what is wrong with it
    if given_query != urlsplit(endpoint.url).query:
        return url
    return with_query(url.strip(), target_query(endpoint))


def target_query(endpoint: WebhookEndpoint) -> str:
    if endpoint.url_query_ciphertext is None:
        return ""
    return runtime.secret_box().decrypt(endpoint.url_query_ciphertext)


def target_url(endpoint: WebhookEndpoint) -> str:
    """The URL deliveries are sent to, with its real query string."""
    if endpoint.url_query_ciphertext is None:
        return endpoint.url
    return with_query(endpoint.url, target_query(endpoint))


def rotate_secret(scope: InstitutionScope) -> str:
    """Replace the signing secret; the old one is useless from this commit on (every later attempt,
    including retries of older deliveries, is signed with the new one)."""
    endpoint = require_endpoint(scope)
    secret = generate_secret()
    endpoint.secret_ciphertext = runtime.secret_box().encrypt(secret)
    endpoint.secret_rotated_at = runtime.clock.now()
    db.session.commit()
    return secret


def signing_secret(endpoint: WebhookEndpoint) -> str:
    return runtime.secret_box().decrypt(endpoint.secret_ciphertext)


def enable_endpoint(scope: InstitutionScope) -> WebhookEndpoint:
    """Re-enable a disabled endpoint and reset its consecutive failure count. Deliveries skipped while it
    was disabled stay `endpoint_disabled` until recovered."""
    endpoint = require_endpoint(scope)
    endpoint.enabled = True
    endpoint.consecutive_failures = 0
    endpoint.disabled_at = None
    db.session.commit()
    return endpoint


def disable_endpoint(scope: InstitutionScope) -> WebhookEndpoint:
    """Stop deliveries by hand: as after 20 failures in a row, unsent deliveries become `endpoint_disabled`
    (recover sends them after re-enabling) and new events are recorded without being sent."""
    endpoint = require_endpoint(scope)
    if not endpoint.enabled:
        raise Conflict("The webhook endpoint is already disabled")
    disable_endpoint_after_failures(endpoint.id, runtime.clock.now())
    db.session.commit()
    db.session.refresh(endpoint)
    return endpoint


def remove_endpoint(scope: InstitutionScope) -> str:
    """Delete the endpoint with its whole delivery log (attempts included) and return its id; a 409 while a
    delivery is being attempted. The events stay in the feed."""
    endpoint = require_endpoint(scope)
    now = runtime.clock.now()
    deliveries = select(WebhookDelivery.id).where(WebhookDelivery.endpoint_id == endpoint.id)
    # Locked first, so no worker can lease one between this check and the delete (claims skip locked rows).
    leases = db.session.scalars(
        select(WebhookDelivery.lease_expires_at).where(WebhookDelivery.endpoint_id == endpoint.id).with_for_update()
    )
    if any(lease is not None and lease > now for lease in leases):
        db.session.rollback()
        raise Conflict("A delivery is being sent right now; try again in a minute")
    db.session.execute(delete(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(deliveries)))
    db.session.execute(delete(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint.id))
    endpoint_id = endpoint.id
    db.session.delete(endpoint)
    db.session.commit()
    return endpoint_id


def disable_endpoint_after_failures(endpoint_id: str, now) -> bool:
    """Disable the endpoint and mark its unsent deliveries `endpoint_disabled` (caller commits).
    Returns False when it was already disabled."""
    changed = db.session.execute(
        update(WebhookEndpoint)
        .where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.enabled.is_(True))
        .values(enabled=False, disabled_at=now)
    ).rowcount
    if changed:
        db.session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.endpoint_id == endpoint_id, WebhookDelivery.status.in_(SENDABLE_STATUSES))
            .values(status="endpoint_disabled", next_attempt_at=None, lease_token=None, lease_expires_at=None)
        )
    return bool(changed)
