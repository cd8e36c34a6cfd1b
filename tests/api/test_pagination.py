"""Keyset pagination and cursors: complete walks, arrivals during a walk, binding to the query, tampering."""
from __future__ import annotations

import base64
from datetime import datetime, timedelta

import pytest

from core.models import utcnow
from tests.api.conftest import walk

LIST = "/api/v1/applications"
SEARCH = "/api/v1/applications/search"


@pytest.fixture
def many(factory, tenant):
    """23 applications; four share one submitted_at so that the id tie-break is exercised."""
    base = datetime(2026, 1, 10, 8, 0, 0)
    made = []
    for number in range(23):
        at = base if number in (5, 6, 7, 8) else base + timedelta(hours=number)
        made.append(factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                        submitted_at=at, decision="accepted" if number % 2 else "none"))
    return made


def expected_order(applications) -> list[str]:
    return [a.id for a in sorted(applications, key=lambda a: (a.submitted_at, a.id))]


@pytest.mark.parametrize("limit", [1, 4, 5, 23, 1000])
def test_walk_returns_every_record_once_in_order(api_get, tenant, many, limit):
    records = walk(api_get, tenant, LIST, {"limit": limit})
    assert [r["id"] for r in records] == expected_order(many)


def test_walk_with_a_filter(api_get, tenant, many):
    records = walk(api_get, tenant, LIST, {"limit": 3, "decision": "accepted"})
    assert [r["id"] for r in records] == expected_order([a for a in many if a.decision == "accepted"])


def test_full_last_page_has_no_next(api_get, tenant, many):
    body = api_get(tenant, LIST, {"limit": 23}).get_json()
    assert body["has_next"] is False and "cursor" not in body
    body = api_get(tenant, LIST, {"limit": 22}).get_json()
    assert body["has_next"] is True and body["cursor"]


def test_walk_sees_applications_that_arrive_between_pages(api_get, factory, tenant, many):
    arrived = []

    def submit_two(page_number):
        for _ in range(2):
            if len(arrived) < 6:
                arrived.append(factory.application(tenant.institution, program=tenant.program,
                                                   cycle=tenant.cycle, submitted_at=utcnow()))

    records = walk(api_get, tenant, LIST, {"limit": 5}, between_pages=submit_two)
    walked = [r["id"] for r in records]
    assert len(walked) == len(set(walked)), "no record twice"
    assert walked == expected_order(many + arrived), "no gap: every existing and arriving record"


def test_updates_during_a_walk_do_not_move_records(api_get, client, factory, tenant, many):
    """Changing stage/decision of walked or unwalked records does not shift the keyset positions."""
    first = api_get(tenant, LIST, {"limit": 10}).get_json()
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                        submitted_at=utcnow() + timedelta(seconds=1))
    rest = walk(api_get, tenant, LIST, {"limit": 10, "cursor": first["cursor"]})
    walked = [r["id"] for r in first["data"] + rest]
    assert walked[:23] == expected_order(many)
    assert len(walked) == 24


def test_format_may_change_during_a_walk(api_get, tenant, many):
    first = api_get(tenant, LIST, {"limit": 5}).get_json()
    as_csv = api_get(tenant, LIST, {"limit": 5, "cursor": first["cursor"], "format": "csv"})
    assert as_csv.status_code == 200
    assert as_csv.headers["X-Has-Next"] == "true"
    back_to_json = api_get(tenant, LIST, {"limit": 5, "cursor": as_csv.headers["X-Cursor"], "format": "json"})
    assert [r["id"] for r in back_to_json.get_json()["data"]] == expected_order(many)[10:15]


BOUND_PARAMETERS = [
    ("limit", "4", "5"),
    ("cycle", "Alpha University 2026 Intake", None),
    ("submitted_after", "2026-01-01", "2026-01-02"),
    ("submitted_before", "2027-01-01", "2027-01-02"),
    ("updated_since", "2025-01-01", "2025-01-02"),
    ("stage", "submitted", "interview"),
    ("decision", "none", "accepted"),
    ("program", "Alpha University Computer Science", None),
    ("enrolled", "false", "true"),
    ("paid", "false", "true"),
]


@pytest.mark.parametrize("parameter, first_value, changed_value", BOUND_PARAMETERS)
def test_cursor_is_bound_to_each_parameter(api_get, tenant, many, parameter, first_value, changed_value):
    params = {"limit": "4", parameter: first_value}
    first = api_get(tenant, LIST, params).get_json()
    assert first["has_next"], first
    same = api_get(tenant, LIST, {**params, "cursor": first["cursor"]})
    assert same.status_code == 200
    variants = [{k: v for k, v in params.items() if k != parameter}] if parameter != "limit" else []
    if changed_value is not None:
        variants.append({**params, parameter: changed_value})
    for changed in variants:
        response = api_get(tenant, LIST, {**changed, "cursor": first["cursor"]})
        assert response.status_code == 400, changed
        message = "cursor does not match this query"
        assert response.get_json() == {"code": 400, "error": message,
                                       "errors": [{"location": "query", "name": "cursor", "message": message}]}


def test_adding_a_filter_invalidates_the_cursor(api_get, tenant, many):
    first = api_get(tenant, LIST, {"limit": 4}).get_json()
    response = api_get(tenant, LIST, {"limit": 4, "stage": "submitted", "cursor": first["cursor"]})
    assert response.get_json()["error"] == "cursor does not match this query"


def test_equivalent_spellings_keep_the_cursor_valid(api_get, tenant, many):
    first = api_get(tenant, LIST, {"limit": 4, "submitted_after": "2026-01-01", "paid": "false"}).get_json()
    response = api_get(tenant, LIST, {"limit": 4, "submitted_after": "2026-01-01T00:00:00Z", "paid": "0",
                                      "cursor": first["cursor"]})
    assert response.status_code == 200


def test_cursor_is_bound_to_q_and_to_the_endpoint(api_get, factory, tenant):
    for _ in range(3):
        factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                            first_name="Aimée", last_name="Uwase")
    first = api_get(tenant, SEARCH, {"q": "uwase", "limit": 1}).get_json()
    assert first["has_next"]
    assert api_get(tenant, SEARCH, {"q": "uwase", "limit": 1, "cursor": first["cursor"]}).status_code == 200
    other_q = api_get(tenant, SEARCH, {"q": "aimee", "limit": 1, "cursor": first["cursor"]})
    assert other_q.get_json()["error"] == "cursor does not match this query"
    on_list = api_get(tenant, LIST, {"limit": 1, "cursor": first["cursor"]})
    assert on_list.get_json()["error"] == "cursor does not match this query"


def test_cursor_of_another_institution_does_not_match(api_get, factory, tenant, other_tenant, many):
    for _ in range(5):
        factory.application(other_tenant.institution, program=other_tenant.program, cycle=other_tenant.cycle)
    first = api_get(tenant, LIST, {"limit": 4}).get_json()
    foreign = api_get(other_tenant, LIST, {"limit": 4, "cursor": first["cursor"]})
    assert foreign.status_code == 400
    assert foreign.get_json()["error"] == "cursor does not match this query"


def _flip_one_character(token: str, index: int) -> str:
    replacement = "A" if token[index] != "A" else "B"
    return token[:index] + replacement + token[index + 1:]


@pytest.mark.parametrize("make_cursor", [
    lambda good: "garbage",
    lambda good: "",
    lambda good: good[:-1],
    lambda good: good + "x",
    lambda good: _flip_one_character(good, 5),
    lambda good: _flip_one_character(good, len(good) - 3),
    lambda good: base64.urlsafe_b64encode(b'["x","2026-01-01T00:00:00","app_1"]').decode() + ".sig",
    lambda good: "é" * 40,
])
def test_tampered_or_garbage_cursor_is_invalid(api_get, tenant, many, make_cursor):
    first = api_get(tenant, LIST, {"limit": 4}).get_json()
    token = make_cursor(first["cursor"])
    response = api_get(tenant, LIST, {"limit": 4, "cursor": token})
    if token == "":
        assert response.status_code == 200  # an empty cursor is the first page
        return
    assert response.status_code == 400
    assert response.get_json() == {"code": 400, "error": "invalid cursor",
                                   "errors": [{"location": "query", "name": "cursor", "message": "invalid cursor"}]}


def test_cursor_signed_with_another_secret_is_invalid(api_get, app, tenant, many):
    from core.applications.listing.cursor import encode_cursor, query_fingerprint

    with app.test_request_context():
        app.config["SECRET_KEY"], original = "another-secret", app.config["SECRET_KEY"]
        try:
            forged = encode_cursor(query_fingerprint("applications", 4, {}),
                                           [tenant.institution.id, "2026-01-10T08:00:00", "app_x"])
        finally:
            app.config["SECRET_KEY"] = original
    response = api_get(tenant, LIST, {"limit": 4, "cursor": forged})
    assert response.get_json()["error"] == "invalid cursor"
