"""The application record pinned from the outside: every field of docs/api.md's record, in the
documented order, with its exact JSON value and its exact CSV cell, through every endpoint that serves it.

The expected values are written out here rather than taken from the code's field table, so a wrong entry in
the table (a misplaced column, a wrong kind, a new field without its documentation) fails.
"""
from __future__ import annotations

import json
from datetime import datetime

import pytest

LIST = "/api/v1/applications"
BY_ID = "/api/v1/applications/by-id"
EXPORT = "/api/v1/applications/export"

# docs/api.md, "CSV": the header row of the dotted field names, in record order.
CSV_HEADER = (
    "id,reference,applicant_id,personal.first_name,personal.last_name,personal.email,personal.phone,"
    "application.program_id,application.program_name,application.cycle_id,application.cycle_name,"
    "application.stage,application.decision,application.enrolled,application.submitted_at,"
    "application.submitted_by_staff,application.updated_at,payment.paid,payment.currency,payment.amount"
)


@pytest.fixture
def two(factory, tenant):
    """Two applications whose values tell every field apart: one with every flag set, a fee with cents and a
    timestamp with microseconds; one with every flag clear, no phone and a name that starts like a formula."""
    full = factory.application(
        tenant.institution, program=tenant.other_program, cycle=tenant.cycle, first_name="Aimée",
        last_name="Uwase", email="aimee@example.rw", stage="interview", decision="accepted", enrolled=True,
        paid=True, submitted_at=datetime(2026, 3, 1, 8, 15, 0),
        updated_at=datetime(2026, 3, 3, 8, 15, 0, 250000), submitted_by_staff=True)
    bare = factory.application(
        tenant.institution, program=tenant.program, cycle=tenant.cycle, first_name="Jean", last_name="=Mugisha",
        email="jean@example.rw", phone=None, submitted_at=datetime(2026, 3, 2, 9, 30, 0))
    return full, bare


def expected_records(tenant, full, bare) -> list[dict]:
    return [
        {
            "id": full.id,
            "reference": full.reference,
            "applicant_id": full.applicant_id,
            "personal": {"first_name": "Aimée", "last_name": "Uwase", "email": "aimee@example.rw",
                         "phone": "+250788000000"},
            "application": {
                "program_id": tenant.other_program.id, "program_name": "Alpha University Nursing",
                "cycle_id": tenant.cycle.id, "cycle_name": "Alpha University 2026 Intake",
                "stage": "interview", "decision": "accepted", "enrolled": True,
                "submitted_at": "2026-03-01T08:15:00Z", "submitted_by_staff": True,
                "updated_at": "2026-03-03T08:15:00.250000Z",
            },
            "payment": {"paid": True, "currency": "USD", "amount": 75.5},
        },
        {
            "id": bare.id,
            "reference": bare.reference,
            "applicant_id": bare.applicant_id,
            "personal": {"first_name": "Jean", "last_name": "=Mugisha", "email": "jean@example.rw", "phone": None},
            "application": {
                "program_id": tenant.program.id, "program_name": "Alpha University Computer Science",
                "cycle_id": tenant.cycle.id, "cycle_name": "Alpha University 2026 Intake",
                "stage": "submitted", "decision": "none", "enrolled": False,
                "submitted_at": "2026-03-02T09:30:00Z", "submitted_by_staff": False,
                "updated_at": "2026-03-02T09:30:00Z",
            },
            "payment": {"paid": False, "currency": "RWF", "amount": 50000.0},
        },
    ]


def expected_csv(tenant, full, bare) -> str:
    return "\n".join([
        CSV_HEADER,
        f"{full.id},{full.reference},{full.applicant_id},Aimée,Uwase,aimee@example.rw,+250788000000,{tenant.other_program.id},"
        f"Alpha University Nursing,{tenant.cycle.id},Alpha University 2026 Intake,interview,accepted,true,"
        f"2026-03-01T08:15:00Z,true,2026-03-03T08:15:00.250000Z,true,USD,75.50",
        f"{bare.id},{bare.reference},{bare.applicant_id},Jean,'=Mugisha,jean@example.rw,,{tenant.program.id},"
        f"Alpha University Computer Science,{tenant.cycle.id},Alpha University 2026 Intake,submitted,none,false,"
        f"2026-03-02T09:30:00Z,false,2026-03-02T09:30:00Z,false,RWF,50000.00",
    ]) + "\n"


def exactly(value) -> str:
    """JSON text of a parsed value: keeps key order and tells `true` from `1` and `75.5` from `"75.5"`."""
    return json.dumps(value, ensure_ascii=False)


def test_json_records_of_the_list_and_by_id_are_exactly_the_documented_fields(api_get, tenant, two):
    full, bare = two
    expected = exactly(expected_records(tenant, full, bare))

    listed = api_get(tenant, LIST)
    assert listed.status_code == 200
    assert exactly(json.loads(listed.get_data(as_text=True))["data"]) == expected

    by_id = api_get(tenant, BY_ID, {"ids": f"{full.id},{bare.id}"})
    assert by_id.status_code == 200
    assert exactly(json.loads(by_id.get_data(as_text=True))["data"]) == expected


def test_csv_of_the_list_and_by_id_is_exactly_the_documented_header_and_cells(api_get, tenant, two):
    full, bare = two
    expected = expected_csv(tenant, full, bare)

    listed = api_get(tenant, LIST, {"format": "csv"})
    assert listed.status_code == 200
    assert listed.get_data(as_text=True) == expected

    by_id = api_get(tenant, BY_ID, {"ids": f"{full.id},{bare.id}", "format": "csv"})
    assert by_id.status_code == 200
    assert by_id.get_data(as_text=True) == expected


def test_exports_write_the_same_records(api_get, tenant, two):
    """On PostgreSQL the exports are rendered by COPY, elsewhere here: both give the records above."""
    full, bare = two

    csv_export = api_get(tenant, EXPORT, {"format": "csv"})
    assert csv_export.status_code == 200
    assert csv_export.get_data(as_text=True) == expected_csv(tenant, full, bare)

    ndjson_export = api_get(tenant, EXPORT, {"format": "ndjson"})
    assert ndjson_export.status_code == 200
    lines = ndjson_export.get_data(as_text=True).split("\n")
    assert lines[-1] == ""
    assert [exactly(json.loads(line)) for line in lines[:-1]] == [
        exactly(record) for record in expected_records(tenant, full, bare)]
