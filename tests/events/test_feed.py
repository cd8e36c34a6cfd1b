"""GET /api/v1/events and /api/v1/events/<id>: the webhook envelopes of the caller's institution, in order."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select, update

from core.applications.decision_answers import record_decision_response
from core.db import db
from core.models import Decision, Event
from core.applications.payments import complete_payment
from core.events.emission import event_body
from tests.conftest import auth_header
from tests.events.conftest import FEED, submitted, walk


def test_an_empty_feed(feed_get, tenant):
    body = feed_get(tenant).get_json()
    assert body == {"code": 200, "has_next": False, "cursor": None, "data": []}


def test_every_event_type_is_the_exact_webhook_envelope(app, client, feed_get, factory, tenant, monkeypatch):
    """All six types, each made by its real path, come back oldest first, each byte-for-byte the delivery body."""
    monkeypatch.setitem(app.config, "EMIT_APPLICATION_UPDATED", True)
    application = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle, paid=False)
    submitted(app, application)
    stages = factory.stages(tenant.institution)
    patched = client.patch("/api/v1/applications/update", headers=tenant.headers, json={"updates": [
        {"id": application.id, "stage": stages[1], "decision": "accepted", "send_decision": True}]})
    assert patched.status_code == 200
    with app.app_context():
        decision_id = db.session.scalar(select(Decision.id).where(Decision.application_id == application.id))
        record_decision_response(decision_id, "accepted")
        complete_payment("flutterwave", "FLW-1", "50000", "RWF", application.id)
    emitted = [event.id for event in _events(app, tenant)]

    items, _ = walk(feed_get, tenant)

    assert [item["type"] for item in items] == [
        "application.submitted", "decision.sent", "application.updated", "decision.responded",
        "payment.completed"]  # the PATCH wrote decision.sent, then application.updated
    assert [item["event_id"] for item in items] == emitted
    with app.app_context():
        for item in items:
            assert item == json.loads(event_body(db.session.get(Event, item["event_id"])))


def test_webhook_test_events_are_in_the_feed_too(feed_get, tenant, emit):
    [ping] = emit(tenant.institution)
    [item] = feed_get(tenant).get_json()["data"]
    assert (item["event_id"], item["type"]) == (ping, "webhook.test")


def test_pages_walk_every_event_once_in_order_and_the_last_cursor_waits_for_more(feed_get, tenant, emit):
    first_batch = emit(tenant.institution, 7)
    items, cursor = walk(feed_get, tenant, {"limit": 3})
    assert [item["event_id"] for item in items] == first_batch

    empty = feed_get(tenant, params={"limit": 3, "cursor": cursor}).get_json()
    assert empty == {"code": 200, "has_next": False, "cursor": cursor, "data": []}

    later = emit(tenant.institution, 2)
    body = feed_get(tenant, params={"limit": 3, "cursor": cursor}).get_json()
    assert [item["event_id"] for item in body["data"]] == later
    assert body["has_next"] is False and body["cursor"] != cursor


def test_has_next_is_exact_at_a_page_boundary(feed_get, tenant, emit):
    emit(tenant.institution, 4)
    first = feed_get(tenant, params={"limit": 2}).get_json()
    second = feed_get(tenant, params={"limit": 2, "cursor": first["cursor"]}).get_json()
    assert (first["has_next"], second["has_next"]) == (True, False)
    assert len(second["data"]) == 2


def test_only_the_callers_institution(feed_get, tenant, other_tenant, emit):
    own = emit(tenant.institution, 2)
    emit(other_tenant.institution, 3)
    assert [item["event_id"] for item in walk(feed_get, tenant)[0]] == own


def test_type_filter_repeated_or_comma_separated_in_any_case(app, feed_get, factory, tenant, emit):
    application = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    pings = emit(tenant.institution, 2)
    submission = submitted(app, application)

    only_pings = feed_get(tenant, params={"type": "webhook.test"}).get_json()["data"]
    assert [item["event_id"] for item in only_pings] == pings
    both = feed_get(tenant, params=[("type", "Webhook.Test"), ("type", " application.submitted")]).get_json()
    assert [item["event_id"] for item in both["data"]] == [*pings, submission]
    commas = feed_get(tenant, params={"type": "application.submitted,WEBHOOK.TEST"}).get_json()
    assert commas["data"] == both["data"]


def test_unknown_type_is_a_400_listing_the_types(feed_get, tenant):
    response = feed_get(tenant, params={"type": "application.deleted"})
    assert response.status_code == 400
    body = response.get_json()
    assert body["error"] == ("type must be one of: application.submitted, application.updated, decision.sent, "
                             "decision.responded, payment.completed, webhook.test")
    assert body["errors"] == [{"location": "query", "name": "type", "message": body["error"]}]


def test_since_filter(app, feed_get, tenant, emit):
    old, recent = emit(tenant.institution, 2)
    with app.app_context():
        db.session.execute(update(Event).where(Event.id == old).values(occurred_at=datetime(2026, 1, 1, 8, 0)))
        db.session.commit()
    body = feed_get(tenant, params={"since": "2026-01-02"}).get_json()
    assert [item["event_id"] for item in body["data"]] == [recent]
    with_offset = feed_get(tenant, params={"since": "2026-01-01T10:00:00+03:00"}).get_json()
    assert [item["event_id"] for item in with_offset["data"]] == [old, recent]


@pytest.mark.parametrize("params, name, message", [
    ({"since": "yesterday"}, "since", "since must be an ISO-8601 date or datetime"),
    ({"limit": "0"}, "limit", "limit must be an integer between 1 and 1000"),
    ({"limit": "1001"}, "limit", "limit must be an integer between 1 and 1000"),
    ({"cursor": "garbage"}, "cursor", "invalid cursor"),
    ({"after": "evt_x"}, "after", "unknown query parameter 'after'"),
])
def test_bad_parameters_are_400_naming_them(feed_get, tenant, params, name, message):
    response = feed_get(tenant, params=params)
    assert response.status_code == 400
    body = response.get_json()
    assert body["error"].startswith(message)
    assert [(problem["location"], problem["name"]) for problem in body["errors"]] == [("query", name)]


@pytest.mark.parametrize("changed", [{"limit": "3"}, {"type": "webhook.test"}, {"since": "2020-01-01"}])
def test_the_cursor_is_bound_to_the_query(feed_get, tenant, emit, changed):
    emit(tenant.institution, 3)
    cursor = feed_get(tenant, params={"limit": "2"}).get_json()["cursor"]
    response = feed_get(tenant, params={"limit": "2", **changed, "cursor": cursor})
    assert response.status_code == 400
    assert response.get_json()["error"] == "cursor does not match this query"


def test_a_cursor_of_another_institution_does_not_match(feed_get, tenant, other_tenant, emit):
    emit(tenant.institution, 2)
    cursor = feed_get(tenant, params={"limit": "1"}).get_json()["cursor"]
    response = feed_get(other_tenant, params={"limit": "1", "cursor": cursor})
    assert response.status_code == 400
    assert response.get_json()["error"] == "cursor does not match this query"


def test_a_tampered_cursor_is_invalid(feed_get, tenant, emit):
    emit(tenant.institution, 2)
    cursor = feed_get(tenant, params={"limit": "1"}).get_json()["cursor"]
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    response = feed_get(tenant, params={"limit": "1", "cursor": tampered})
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid cursor"


def test_one_event_by_id(app, feed_get, tenant, other_tenant, emit):
    [ping] = emit(tenant.institution)
    [foreign] = emit(other_tenant.institution)
    body = feed_get(tenant, f"{FEED}/{ping}").get_json()
    with app.app_context():
        assert body == {"code": 200, "data": json.loads(event_body(db.session.get(Event, ping)))}
    for missing in (foreign, "evt_doesnotexist"):
        response = feed_get(tenant, f"{FEED}/{missing}")
        assert response.status_code == 404
        assert response.get_json() == {"code": 404, "error": "Event not found", "errors": [
            {"location": "path", "name": "event_id", "message": "no event with this id"}]}


@pytest.mark.parametrize("path", [FEED, f"{FEED}/evt_x"])
def test_a_live_credential_is_required(client, path):
    assert client.get(path).status_code == 401
    assert client.get(path, headers=auth_header("sk_trial_demo")).status_code == 401


def test_events_are_listed_in_the_order_their_transactions_wrote_them(app, feed_get, tenant, emit):
    """Within the visible window the feed follows (transaction, sequence), not `occurred_at`."""
    first, second = emit(tenant.institution, 2)
    with app.app_context():
        db.session.execute(update(Event).where(Event.id == first)
                           .values(occurred_at=datetime(2026, 1, 1) + timedelta(days=1)))
        db.session.execute(update(Event).where(Event.id == second).values(occurred_at=datetime(2026, 1, 1)))
        db.session.commit()
    assert [item["event_id"] for item in feed_get(tenant).get_json()["data"]] == [first, second]


def _events(app, tenant) -> list[Event]:
    with app.app_context():
        rows = db.session.scalars(select(Event).where(Event.institution_id == tenant.institution.id)
                                  .order_by(Event.xact_id, Event.seq)).all()
        for row in rows:
            db.session.expunge(row)
        return rows
