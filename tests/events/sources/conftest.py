"""Event sources end to end: the product path over HTTP, the event and delivery rows, then a real delivery.

Every test uses the webhook engine set up against the local HTTPS receiver (tests/webhooks), so an event
written by a source is also delivered, signed, and checked with the independent verifier.
"""
from __future__ import annotations

import re
import time

import pytest
from sqlalchemy import select

from core.db import db
from core.models import AuditLog, Event
from core.models.webhooks import WebhookDelivery
from core.scoping import InstitutionScope
from core.webhooks.endpoints import save_endpoint
from tests.openapi_check import assert_is_event
from tests.webhooks.conftest import (  # noqa: F401 (fixtures)
    RECEIVER_HOST, clock, delivering, engine, receiver, resolver, run_worker,
)
from tests.webhooks.independent_verifier import verify

MPESA_SECRET = "mpesa-aggregator-shared-secret"
FLUTTERWAVE_HASH = "flw-dashboard-secret-hash"
_CSRF_INPUT = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"|'
                         r'name="csrf_token" value="([^"]+)"|value="([^"]+)" name="csrf_token"')


@pytest.fixture
def sources(engine, monkeypatch):  # noqa: F811
    """The app with both processors configured and a public-form limit that the suite cannot reach."""
    monkeypatch.setitem(engine.config, "MPESA_CALLBACK_SECRET", MPESA_SECRET)
    monkeypatch.setitem(engine.config, "FLUTTERWAVE_SECRET_HASH", FLUTTERWAVE_HASH)
    monkeypatch.setitem(engine.config, "PUBLIC_FORM_RATE_LIMIT", "100000/minute")
    return engine


@pytest.fixture
def client(sources):
    return sources.test_client()


def subscribe(app, institution, receiver, **options) -> str:  # noqa: F811
    """Give the institution a webhook endpoint at the local receiver; returns its signing secret."""
    with app.app_context():
        _, secret = save_endpoint(InstitutionScope(institution.id), receiver.url(RECEIVER_HOST), **options)
        return secret


def csrf_token(html: str) -> str:
    match = _CSRF_INPUT.search(html)
    assert match, "the page has no CSRF token"
    return next(group for group in match.groups() if group)


def events_of(app, institution, event_type: str) -> list[Event]:
    with app.app_context():
        rows = db.session.scalars(select(Event).where(Event.institution_id == institution.id,
                                                      Event.type == event_type).order_by(Event.occurred_at)).all()
        for row in rows:
            db.session.expunge(row)
        return rows


def deliveries_of(app, event: Event) -> list[WebhookDelivery]:
    with app.app_context():
        rows = db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == event.id)).all()
        for row in rows:
            db.session.expunge(row)
        return rows


def assert_written_and_delivered(app, institution, event_type: str, expected_data: dict, secret: str,
                                 receiver) -> Event:  # noqa: F811
    """Exactly one event of the type with exactly this payload, its pending delivery, then the signed POST."""
    [event] = events_of(app, institution, event_type)
    assert event.payload == expected_data
    [delivery] = deliveries_of(app, event)
    assert (delivery.status, delivery.event_type, delivery.attempts) == ("pending", event_type, 0)
    run_worker(app)
    [request] = receiver.requests
    body = verify(secret, request.headers, request.body, time.time())
    assert_is_event(body)
    assert body["event_id"] == event.id and body["type"] == event_type
    assert body["institution_id"] == institution.id
    assert body["data"] == expected_data
    return event


def audit_rows(app, source: str) -> list[tuple]:
    """(institution_id, actor, action, target, status) of the audit rows of `source`, oldest first."""
    with app.app_context():
        return [tuple(row) for row in db.session.execute(
            select(AuditLog.institution_id, AuditLog.actor, AuditLog.action, AuditLog.target, AuditLog.status)
            .where(AuditLog.source == source).order_by(AuditLog.id))]
