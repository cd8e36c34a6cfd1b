"""Fixtures of the events feed tests: institutions with a live key, and helpers that emit real events."""
from __future__ import annotations

import pytest

from core.events import emission
from core.db import db
from core.models import Application
from core.scoping import InstitutionScope
from tests.openapi_check import assert_conforms, assert_is_event
from tests.api.conftest import make_tenant

FEED = "/api/v1/events"


@pytest.fixture
def tenant(factory):
    return make_tenant(factory, "Alpha University")


@pytest.fixture
def other_tenant(factory):
    return make_tenant(factory, "Beta University")


@pytest.fixture
def feed_get(client):
    """GET a feed path with a tenant's key; the response is checked against the document, items too."""
    def get(tenant, path=FEED, params=None):
        response = client.get(path, query_string=params, headers=tenant.headers)
        assert_conforms(response)
        if response.status_code == 200:
            body = response.get_json()
            for item in body["data"] if isinstance(body["data"], list) else [body["data"]]:
                assert_is_event(item)
        return response
    return get


@pytest.fixture
def emit(app):
    """Emit `webhook.test` events for an institution, each in its own transaction; returns their ids."""
    def emit_pings(institution, count=1) -> list[str]:
        ids = []
        for _ in range(count):
            with app.app_context():
                event = emission.emit_webhook_test(InstitutionScope(institution.id))
                db.session.commit()
                ids.append(event.id)
        return ids
    return emit_pings


def submitted(app, application) -> str:
    """Emit `application.submitted` for a factory-made application; returns the event id."""
    with app.app_context():
        event = emission.emit_application_submitted(db.session.get(Application, application.id))
        db.session.commit()
        return event.id


def walk(feed_get, tenant, params=None) -> tuple[list[dict], str | None]:
    """Every event from the start, page by page; (events, the last cursor)."""
    seen, cursor = [], None
    while True:
        body = feed_get(tenant, params={**(params or {}), **({"cursor": cursor} if cursor else {})}).get_json()
        seen.extend(body["data"])
        cursor = body["cursor"]
        if not body["has_next"]:
            return seen, cursor
