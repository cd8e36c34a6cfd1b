"""GET /api/v1/applications: record shape, order, filters, limits and parameter errors."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

LIST = "/api/v1/applications"


def ids(response) -> list[str]:
    return [record["id"] for record in response.get_json()["data"]]


def test_record_has_the_spec_shape_and_the_extra_fields(api_get, factory, tenant):
    submitted = datetime(2026, 3, 1, 8, 15, 0)
    application = factory.application(
        tenant.institution, program=tenant.other_program, cycle=tenant.cycle, first_name="Aimée",
        last_name="Uwase", email="aimee@example.rw", stage="interview", decision="accepted", enrolled=True,
        paid=True, submitted_at=submitted, updated_at=submitted + timedelta(days=2), submitted_by_staff=True)

    response = api_get(tenant, LIST)

    assert response.status_code == 200
    body = response.get_json()
    assert body == {
        "code": 200,
        "has_next": False,
        "data": [{
            "id": application.id,
            "reference": application.reference,
            "applicant_id": application.applicant_id,
            "personal": {"first_name": "Aimée", "last_name": "Uwase", "email": "aimee@example.rw",
                         "phone": "+250788000000"},
            "application": {
                "program_id": tenant.other_program.id, "program_name": "Alpha University Nursing",
                "cycle_id": tenant.cycle.id, "cycle_name": "Alpha University 2026 Intake",
                "stage": "interview", "decision": "accepted", "enrolled": True,
                "submitted_at": "2026-03-01T08:15:00Z", "submitted_by_staff": True,
                "updated_at": "2026-03-03T08:15:00Z",
            },
            "payment": {"paid": True, "currency": "USD", "amount": 75.5},
        }],
    }
    assert response.headers["X-Has-Next"] == "false"
    assert "X-Cursor" not in response.headers


def test_empty_institution_gives_an_empty_page(api_get, tenant):
    response = api_get(tenant, LIST)
    assert response.get_json() == {"code": 200, "has_next": False, "data": []}


def test_order_is_submitted_at_then_id(api_get, factory, tenant):
    same_time = datetime(2026, 2, 1, 12, 0, 0)
    made = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                submitted_at=at)
            for at in (same_time + timedelta(hours=1), same_time, same_time, same_time - timedelta(days=1))]
    expected = [made[3].id] + sorted([made[1].id, made[2].id]) + [made[0].id]
    assert ids(api_get(tenant, LIST)) == expected


@pytest.fixture
def varied(factory, tenant):
    """Applications that differ in one attribute each, on known days of March 2026."""
    second_cycle = factory.cycle(tenant.institution, programs=[tenant.program], name="Alpha 2027 Intake")
    def make(day, **fields):
        fields.setdefault("program", tenant.program)
        fields.setdefault("cycle", tenant.cycle)
        return factory.application(tenant.institution, submitted_at=datetime(2026, 3, day, 9, 0, 0), **fields)
    return {
        "plain": make(1),
        "interview": make(2, stage="interview"),
        "accepted": make(3, decision="accepted"),
        "enrolled": make(4, enrolled=True),
        "paid": make(5, paid=True),
        "nursing": make(6, program=tenant.other_program),
        "next_cycle": make(7, cycle=second_cycle),
        "recently_updated": make(8, updated_at=datetime(2026, 6, 1, 0, 0, 0)),
        "second_cycle": second_cycle,
    }


@pytest.mark.parametrize("params, expected", [
    ({"stage": "interview"}, ["interview"]),
    ({"decision": "accepted"}, ["accepted"]),
    ({"enrolled": "true"}, ["enrolled"]),
    ({"enrolled": "false"}, ["plain", "interview", "accepted", "paid", "nursing", "next_cycle",
                             "recently_updated"]),
    ({"paid": "1"}, ["paid"]),
    ({"submitted_after": "2026-03-07"}, ["next_cycle", "recently_updated"]),
    ({"submitted_after": "2026-03-07T09:00:00Z"}, ["next_cycle", "recently_updated"]),
    ({"submitted_after": "2026-03-07T09:00:01Z"}, ["recently_updated"]),
    ({"submitted_before": "2026-03-02T09:00:00Z"}, ["plain"]),
    ({"submitted_before": "2026-03-03T11:00:00+02:00"}, ["plain", "interview"]),
    ({"submitted_after": "2026-03-02", "submitted_before": "2026-03-04"}, ["interview", "accepted"]),
    ({"updated_since": "2026-05-01"}, ["recently_updated"]),
    ({"decision": "none", "stage": "submitted", "enrolled": "false", "paid": "false",
      "submitted_after": "2026-03-05"}, ["nursing", "next_cycle", "recently_updated"]),
])
def test_filters(api_get, tenant, varied, params, expected):
    response = api_get(tenant, LIST, params)
    assert response.status_code == 200
    assert ids(response) == [varied[name].id for name in expected]


def test_cycle_filter_takes_an_id_or_the_exact_name(api_get, tenant, varied):
    by_id = api_get(tenant, LIST, {"cycle": varied["second_cycle"].id})
    by_name = api_get(tenant, LIST, {"cycle": "Alpha 2027 Intake"})
    assert ids(by_id) == ids(by_name) == [varied["next_cycle"].id]


def test_program_filter_takes_an_id_or_the_exact_name(api_get, tenant, varied):
    by_id = api_get(tenant, LIST, {"program": tenant.other_program.id})
    by_name = api_get(tenant, LIST, {"program": "Alpha University Nursing"})
    assert ids(by_id) == ids(by_name) == [varied["nursing"].id]


def test_unknown_cycle_or_program_is_a_400_listing_the_valid_names(api_get, tenant, other_tenant, varied):
    cycle = api_get(tenant, LIST, {"cycle": "Alpha 2099 Intake"})
    assert cycle.status_code == 400 and cycle.get_json()["errors"][0]["name"] == "cycle"
    assert cycle.get_json()["error"] == (
        "cycle must be the id or the exact name of one of your cycles: 'Alpha 2027 Intake', "
        "'Alpha University 2026 Intake' (GET /api/v1/cycles lists them with their ids)")
    program = api_get(tenant, LIST, {"program": "Nursing"})
    assert program.status_code == 400 and program.get_json()["errors"][0]["name"] == "program"
    assert program.get_json()["error"] == (
        "program must be the id or the exact name of one of your programs: 'Alpha University Computer Science', "
        "'Alpha University Nursing' (GET /api/v1/cycles lists them with their ids)")
    assert "Beta" not in cycle.get_json()["error"] + program.get_json()["error"]  # only the caller's own


def test_unknown_stage_is_a_400_listing_the_pipeline(api_get, factory, tenant, varied):
    response = api_get(tenant, LIST, {"stage": "no-such-stage"})
    assert response.status_code == 400
    body = response.get_json()
    stages = factory.stages(tenant.institution)
    assert body["error"] == (f"stage must be one of your pipeline's stage ids: {', '.join(stages)} "
                             "(GET /api/v1/institution lists them)")
    assert body["errors"] == [{"location": "query", "name": "stage", "message": body["error"]}]


def test_unknown_parameter_is_a_400_naming_it(api_get, tenant, varied):
    response = api_get(tenant, LIST, {"decison": "accepted"})
    assert response.status_code == 400
    body = response.get_json()
    assert body["error"] == "unknown query parameter 'decison'"
    [problem] = body["errors"]
    assert (problem["location"], problem["name"]) == ("query", "decison")
    assert "did you mean decision?" in problem["message"]


def test_every_unknown_parameter_is_listed(api_get, tenant, varied):
    response = api_get(tenant, LIST, {"colour": "blue", "sort": "-id", "limit": "5"})
    assert response.status_code == 400
    assert response.get_json()["error"] == "unknown query parameter 'colour' and 1 more"
    assert [problem["name"] for problem in response.get_json()["errors"]] == ["colour", "sort"]


@pytest.mark.parametrize("params, expected", [
    ({"format": "JSON"}, ["accepted"]),
    ({"decision": "Accepted"}, ["accepted"]),
    ({"decision": " accepted "}, ["accepted"]),
    ({"stage": "INTERVIEW"}, ["interview"]),
    ({"stage": "interview  "}, ["interview"]),
    ({"program": " Alpha University Nursing "}, ["nursing"]),
    ({"submitted_before": " 2026-03-02T09:00:00Z"}, ["plain"]),
    ({"enrolled": "TRUE"}, ["enrolled"]),
])
def test_values_are_read_leniently(api_get, tenant, varied, params, expected):
    response = api_get(tenant, LIST, {"decision": "accepted", **params} if "format" in params else params)
    assert response.status_code == 200
    assert ids(response) == [varied[name].id for name in expected]


def test_format_matches_whatever_its_case(api_get, tenant, varied):
    response = api_get(tenant, LIST, {"format": " CSV"})
    assert response.status_code == 200
    assert response.mimetype == "text/csv"


@pytest.mark.parametrize("params, parameter, message", [
    ({"limit": "0"}, "limit", "limit must be an integer between 1 and 1000"),
    ({"limit": "1001"}, "limit", "limit must be an integer between 1 and 1000"),
    ({"limit": "-5"}, "limit", "limit must be an integer between 1 and 1000"),
    ({"limit": "ten"}, "limit", "limit must be an integer between 1 and 1000"),
    ({"limit": "2.5"}, "limit", "limit must be an integer between 1 and 1000"),
    ({"format": "xml"}, "format", "format must be json or csv"),
    ({"format": ""}, "format", "format must be json or csv"),
    ({"decision": "maybe"}, "decision", "decision must be one of: none, accepted, waitlisted, rejected, deferred"),
    ({"enrolled": "perhaps"}, "enrolled", "enrolled must be true or false"),
    ({"paid": "2"}, "paid", "paid must be true or false"),
    ({"submitted_after": "yesterday"}, "submitted_after", None),
    ({"submitted_before": "2026-02-30"}, "submitted_before", None),
    ({"updated_since": "2026-13-01T00:00:00Z"}, "updated_since", None),
    ({"submitted_after": "0001-01-01T00:00:00+01:00"}, "submitted_after", None),
    ({"submitted_before": "9999-12-31T23:59:59-01:00"}, "submitted_before", None),
])
def test_bad_parameters_are_400_naming_the_parameter(api_get, tenant, params, parameter, message):
    response = api_get(tenant, LIST, params)
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == 400
    assert body["errors"][0]["name"] == parameter
    if message is not None:
        assert body["error"] == message
    else:
        assert body["error"].startswith(f"{parameter} must be an ISO-8601 date or datetime")


@pytest.mark.parametrize("limit, expected_count, has_next", [("1", 1, True), ("1000", 3, False), ("", 3, False)])
def test_limit_bounds_are_accepted(api_get, factory, tenant, limit, expected_count, has_next):
    for _ in range(3):
        factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    body = api_get(tenant, LIST, {"limit": limit}).get_json()
    assert len(body["data"]) == expected_count
    assert body["has_next"] is has_next


def test_default_limit_is_50(api_get, factory, tenant):
    for _ in range(51):
        factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    body = api_get(tenant, LIST).get_json()
    assert len(body["data"]) == 50
    assert body["has_next"] is True


def test_missing_or_wrong_key_is_401(api_get, tenant):
    assert api_get(None, LIST).status_code == 401
    wrong = api_get(None, LIST, headers={"Authorization": "Bearer sk_live_wrong"})
    assert wrong.status_code == 401
    assert wrong.get_json()["code"] == 401


def test_trial_key_is_refused(api_get):
    response = api_get(None, LIST, headers={"Authorization": "Bearer sk_trial_demo"})
    assert response.status_code == 401
    assert "trial" in response.get_json()["error"].lower()
