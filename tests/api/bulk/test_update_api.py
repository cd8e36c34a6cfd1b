"""PATCH /api/v1/applications/update through the HTTP surface."""
from __future__ import annotations

import io
import json
import time
import zipfile

import pytest
from sqlalchemy import select

from core.db import db
from core.models import Decision, Event, Stage, utcnow
from core.timefmt import isoformat_z
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms

DECISIONS = ["none", "accepted", "waitlisted", "rejected", "deferred"]


def events_of(app, event_type):
    with app.app_context():
        return db.session.scalars(select(Event).where(Event.type == event_type).order_by(Event.occurred_at)).all()


def decisions_of(app, application_id):
    with app.app_context():
        return db.session.scalars(select(Decision).where(Decision.application_id == application_id)
                                  .order_by(Decision.created_at)).all()


def test_changes_stage_decision_and_enrolment_and_returns_the_records(patch, school):
    first, second, third = school.ids
    new_stage = school.stages[-1]

    response = patch(school.headers, {"updates": [
        {"id": third, "stage": new_stage},
        {"id": first, "decision": "waitlisted"},
        {"id": second, "enrolled": True, "stage": new_stage},
    ]})

    assert response.status_code == 200
    body = response.get_json()
    assert body["code"] == 200
    assert body["updated"] == 3
    assert [record["id"] for record in body["data"]] == [third, first, second]
    by_id = {record["id"]: record["application"] for record in body["data"]}
    assert by_id[third]["stage"] == new_stage
    assert by_id[first]["decision"] == "waitlisted"
    assert by_id[first]["stage"] == "submitted"
    assert by_id[second]["enrolled"] is True
    assert by_id[second]["stage"] == new_stage


def test_changed_applications_move_updated_at_and_appear_in_an_updated_since_sync(client, patch, school):
    second = school.ids[1]
    sync_started = isoformat_z(utcnow())
    time.sleep(0.01)

    body = patch(school.headers, {"updates": [{"id": second, "decision": "accepted"}]}).get_json()

    record = body["data"][0]
    assert record["application"]["updated_at"] > sync_started
    zipped = client.get("/api/v1/applications/zip", query_string={"updated_since": sync_started},
                        headers=school.headers)
    assert_conforms(zipped)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(zipped.data)).read("manifest.json"))
    assert [a["id"] for a in manifest["applications"]] == [second]


def test_decisions_and_stage_ids_match_any_case_and_spaces_are_trimmed(patch, school):
    first = school.ids[0]

    response = patch(school.headers, {"updates": [
        {"id": f" {first} ", "decision": " Accepted", "stage": school.stages[1].upper() + " "}]})

    assert response.status_code == 200
    application = response.get_json()["data"][0]["application"]
    assert (application["decision"], application["stage"]) == ("accepted", school.stages[1])


def test_setting_the_current_values_changes_nothing(patch, school):
    first = school.applications[0]

    body = patch(school.headers, {"updates": [
        {"id": first.id, "stage": first.stage, "decision": first.decision, "enrolled": first.enrolled},
    ]}).get_json()

    assert body["updated"] == 0
    assert body["data"][0]["application"]["updated_at"] == isoformat_z(first.updated_at)


def test_a_decision_change_records_an_unsent_decision(app, patch, school):
    first = school.ids[0]

    patch(school.headers, {"updates": [{"id": first, "decision": "accepted"}]})
    patch(school.headers, {"updates": [{"id": first, "decision": "rejected"}]})

    decisions = decisions_of(app, first)
    assert [(d.status, d.sent_at) for d in decisions] == [("accepted", None), ("rejected", None)]
    assert all(d.institution_id == school.institution.id for d in decisions)
    assert events_of(app, "decision.sent") == []


def test_send_decision_marks_it_sent_and_emits_decision_sent(app, patch, school):
    first = school.applications[0]

    response = patch(school.headers, {"updates": [
        {"id": first.id, "decision": "accepted", "send_decision": True}]})

    assert response.status_code == 200
    [decision] = decisions_of(app, first.id)
    assert decision.status == "accepted"
    assert decision.sent_at is not None
    [event] = events_of(app, "decision.sent")
    assert event.institution_id == school.institution.id
    assert event.payload == {
        "decision_id": decision.id,
        "submission_id": first.id,
        "admission_id": first.applicant_id,
        "institution_id": school.institution.id,
        "decision_status": "accepted",
        "sent_at": isoformat_z(decision.sent_at),
    }


def test_send_decision_alone_sends_the_current_decision_once(app, patch, school):
    first = school.ids[0]
    patch(school.headers, {"updates": [{"id": first, "decision": "deferred"}]})

    sent = patch(school.headers, {"updates": [{"id": first, "send_decision": True}]}).get_json()
    resent = patch(school.headers, {"updates": [{"id": first, "send_decision": True}]}).get_json()

    assert (sent["updated"], resent["updated"]) == (1, 0)
    [decision] = decisions_of(app, first)
    assert decision.status == "deferred" and decision.sent_at is not None
    assert [e.payload["decision_status"] for e in events_of(app, "decision.sent")] == ["deferred"]


def test_sending_a_decision_given_by_other_means_records_it(app, factory, patch, school):
    decided = factory.application(school.institution, program=school.program, cycle=school.cycle,
                                  decision="waitlisted")

    patch(school.headers, {"updates": [{"id": decided.id, "send_decision": True}]})

    [decision] = decisions_of(app, decided.id)
    assert (decision.status, decision.sent_at is not None) == ("waitlisted", True)
    assert len(events_of(app, "decision.sent")) == 1


def test_application_updated_is_emitted_only_when_enabled(app, patch, school, monkeypatch):
    first, second, _ = school.ids
    patch(school.headers, {"updates": [{"id": first, "stage": school.stages[1]}]})
    assert events_of(app, "application.updated") == []

    monkeypatch.setitem(app.config, "EMIT_APPLICATION_UPDATED", True)
    patch(school.headers, {"updates": [
        {"id": second, "stage": school.stages[2]},
        {"id": first, "stage": school.stages[1]},
    ]})

    [event] = events_of(app, "application.updated")
    assert event.payload["submission_id"] == second
    assert event.payload["stage_id"] == school.stages[2]


def item_name(index: int, field: str | None) -> str:
    """How the error body names a field of an item: `updates[3].decision`, or `updates[3]` for the item."""
    return f"updates[{index}]" + (f".{field}" if field else "")


INVALID_ITEMS = {
    "unknown id": ({"id": "app_doesnotexist", "stage": "submitted"}, "id", "no application with this id"),
    "invalid decision": ({"decision": "maybe"}, "decision", "must be one of none, accepted"),
    "unknown stage": ({"stage": "graduated"}, "stage", "unknown stage 'graduated'"),
    "enrolled as a string": ({"enrolled": "true"}, "enrolled", "must be true or false"),
    "enrolled as a number": ({"enrolled": 1}, "enrolled", "must be true or false"),
    "stage as a number": ({"stage": 3}, "stage", "must be a string"),
    "null decision": ({"decision": None}, "decision", "must not be null"),
    "send_decision as a string": ({"send_decision": "yes"}, "send_decision", "must be true or false"),
    "institution_id": ({"institution_id": "ins_other", "stage": "submitted"}, "institution_id", "read-only"),
    "updated_at": ({"updated_at": "2020-01-01T00:00:00Z"}, "updated_at", "read-only"),
    "submitted_at": ({"submitted_at": "2020-01-01T00:00:00Z"}, "submitted_at", "read-only"),
    "unknown field": ({"colour": "blue"}, "colour", "unknown field"),
    "nothing to update": ({}, None, "nothing to update"),
    "sending the decision none": ({"decision": "none", "send_decision": True}, "send_decision",
                                  "cannot send the decision none"),
    "sending when undecided": ({"send_decision": True}, "send_decision", "has no decision"),
}


@pytest.mark.parametrize("kind", INVALID_ITEMS)
def test_one_invalid_item_rejects_the_whole_batch(patch, school, database_state, kind):
    item, field, message = INVALID_ITEMS[kind]
    first, second, third = school.ids
    bad = {"id": third, **item}
    before = database_state()

    response = patch(school.headers, {"updates": [
        {"id": first, "decision": "accepted", "send_decision": True},
        bad,
        {"id": second, "stage": school.stages[-1], "enrolled": True},
    ]})

    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == 400
    assert body["error"] == "1 of 3 updates are invalid; nothing was changed"
    [error] = body["errors"]
    assert error["index"] == 1
    assert error["id"] == bad["id"]
    assert (error["location"], error["name"]) == ("body", item_name(1, field))
    assert message in error["message"]
    assert database_state() == before


def test_an_item_that_is_not_an_object_or_has_a_bad_id(patch, school, database_state):
    before = database_state()

    response = patch(school.headers, {"updates": [
        ["not", "an", "object"], {"stage": "submitted"}, {"id": 42, "stage": "submitted"},
        {"id": "", "stage": "submitted"}]})

    assert response.status_code == 400
    errors = response.get_json()["errors"]
    assert [(e["index"], e["id"], e["name"]) for e in errors] == [
        (0, None, "updates[0]"), (1, None, "updates[1].id"), (2, None, "updates[2].id"), (3, "", "updates[3].id")]
    assert errors[0]["message"] == "each update must be a JSON object"
    assert errors[1]["message"] == "is required"
    assert database_state() == before


def test_duplicate_ids_in_one_batch_are_rejected(patch, school, database_state):
    first = school.ids[0]
    before = database_state()

    response = patch(school.headers, {"updates": [
        {"id": first, "stage": school.stages[1]}, {"id": first, "stage": school.stages[2]}]})

    assert response.status_code == 400
    [error] = response.get_json()["errors"]
    assert (error["index"], error["name"]) == (1, "updates[1].id")
    assert error["message"] == "duplicate id: already updated by item 0"
    assert database_state() == before


def test_every_problem_is_reported_at_once(patch, school):
    first, second, third = school.ids

    response = patch(school.headers, {"updates": [
        {"id": first, "decision": "maybe", "enrolled": "no"},
        {"id": second, "stage": school.stages[1]},
        {"id": "app_missing", "decision": "accepted"},
        {"id": third, "stage": "nowhere"},
    ]})

    body = response.get_json()
    assert body["error"] == "3 of 4 updates are invalid; nothing was changed"
    assert [e["name"] for e in body["errors"]] == [
        "updates[0].decision", "updates[0].enrolled", "updates[2].id", "updates[3].stage"]


def test_ids_of_another_institution_are_unknown_and_block_the_batch(
        patch, school, other_school, database_state):
    foreign = other_school.ids[0]
    before = database_state()

    response = patch(school.headers, {"updates": [
        {"id": school.ids[0], "stage": school.stages[1]},
        {"id": foreign, "decision": "rejected"},
    ]})

    assert response.status_code == 400
    [error] = response.get_json()["errors"]
    assert error == {"location": "body", "name": "updates[1].id", "message": "no application with this id",
                     "index": 1, "id": foreign}
    assert database_state() == before


def test_stages_of_another_institution_are_unknown(patch, factory, school, database_state):
    with_own_stage = make_other_pipeline(factory)
    before = database_state()

    response = patch(school.headers, {"updates": [{"id": school.ids[0], "stage": with_own_stage}]})

    assert response.status_code == 400
    assert response.get_json()["errors"][0]["name"] == "updates[0].stage"
    assert database_state() == before


def make_other_pipeline(factory) -> str:
    other = factory.institution("Stage Owner")
    with factory.app.app_context():
        db.session.add(Stage(institution_id=other.id, key="their_own_stage", name="Theirs", position=9))
        db.session.commit()
    return "their_own_stage"


BAD_BODIES = {
    "malformed JSON": ('{"updates": [', "application/json", "Request body is not valid JSON: "),
    "wrong content type": ('{"updates": []}', "text/plain", "send 'Content-Type: application/json'"),
    "form body": ("updates=1", "application/x-www-form-urlencoded", "send 'Content-Type: application/json'"),
    "empty body": ("", "application/json", "Request body is empty"),
    "not an object": ("[1, 2]", "application/json", "Request body must be a JSON object"),
    "no updates": ("{}", "application/json", "updates is required"),
    "updates not a list": ('{"updates": {"id": "x"}}', "application/json", "list of 1 to 500"),
    "empty list": ('{"updates": []}', "application/json", "list of 1 to 500"),
    "too many items": (json.dumps({"updates": [{"id": f"app_{i}", "stage": "x"} for i in range(501)]}),
                       "application/json", "list of 1 to 500"),
    "unknown top-level field": ('{"updates": [{"id": "a", "stage": "b"}], "dry_run": true}',
                                "application/json", "unknown field dry_run"),
}


@pytest.mark.parametrize("kind", BAD_BODIES)
def test_bad_bodies_get_a_clear_400(patch, school, database_state, kind):
    data, content_type, message = BAD_BODIES[kind]
    before = database_state()

    response = patch(school.headers, data=data, content_type=content_type)

    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == 400
    assert all(set(problem) >= {"location", "name", "message"} for problem in body["errors"])
    assert message in body["error"]
    assert database_state() == before


def test_five_hundred_items_pass_the_size_check(patch, school):
    response = patch(school.headers, {"updates": [{"id": f"app_{i}", "stage": "x"} for i in range(500)]})

    body = response.get_json()
    assert response.status_code == 400
    assert len(body["errors"]) == 500
    assert {e["message"] for e in body["errors"]} == {"no application with this id"}


def test_a_body_over_the_configured_cap_is_413(app, patch, school, database_state, monkeypatch):
    monkeypatch.setitem(app.config, "MAX_CONTENT_LENGTH", 2048)
    before = database_state()
    updates = [{"id": school.ids[0], "stage": school.stages[1]}] + [
        {"id": f"app_padding_{i:04d}", "stage": "submitted"} for i in range(60)]

    response = patch(school.headers, {"updates": updates})

    assert response.status_code == 413
    message = "Request body too large: at most 2048 bytes"
    assert response.get_json() == {
        "code": 413, "error": message, "errors": [{"location": "body", "name": "body", "message": message}],
        "max_bytes": 2048}
    assert database_state() == before


@pytest.mark.parametrize("headers", [{}, auth_header("sk_trial_demo"), auth_header("sk_live_wrong")])
def test_requires_a_live_credential(patch, school, database_state, headers):
    before = database_state()

    response = patch(headers, {"updates": [{"id": school.ids[0], "stage": school.stages[1]}]})

    assert response.status_code == 401
    assert database_state() == before


def test_json_with_a_charset_parameter_is_accepted(patch, school):
    body = json.dumps({"updates": [{"id": school.ids[0], "enrolled": True}]})

    response = patch(school.headers, data=body, content_type="application/json; charset=utf-8")

    assert response.status_code == 200
    assert response.get_json()["data"][0]["application"]["enrolled"] is True
