"""GET /api/v1/applications/export: every matching record in one stream, identical to walking the pages."""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime

import pytest
from sqlalchemy import select

from core.applications import ndjson_export
from core.db import db
from core.models import Application
from core.privacy.subject_requests import erase
from core.scoping import InstitutionScope
from tests.conftest import TEST_DB
from tests.api.conftest import walk
from tests.applications.test_export import AWKWARD_NAMES

EXPORT = "/api/v1/applications/export"
LIST = "/api/v1/applications"


@pytest.fixture
def records(factory, tenant, other_tenant):
    for number, name in enumerate(AWKWARD_NAMES):
        factory.application(
            tenant.institution, program=tenant.program if number % 2 else tenant.other_program,
            cycle=tenant.cycle, first_name=name, last_name=name[::-1], decision="accepted" if number % 3 else "none",
            paid=number % 4 == 0, enrolled=number % 5 == 0, submitted_by_staff=number % 2 == 0,
            submitted_at=datetime(2026, 5, 1, 9, number, 0, 0 if number % 2 else 123456),
            phone=None if number % 7 == 3 else f"+2507880000{number:02d}")  # a NULL is exported as null
    factory.application(other_tenant.institution, program=other_tenant.program, cycle=other_tenant.cycle,
                        first_name="Foreign")


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("params", [{}, {"paid": "true"}, {"decision": "accepted", "enrolled": "false"},
                                    {"q": "zoe"}])
def test_ndjson_export_is_exactly_the_records_of_the_pages(api_get, tenant, records, params):
    paged = walk(api_get, tenant, LIST, {**params, "limit": 4})
    response = api_get(tenant, EXPORT, {**params, "format": "NDJSON"})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert response.headers["Content-Disposition"].startswith('attachment; filename="applications-')
    lines = response.get_data(as_text=True).splitlines()
    assert [json.loads(line) for line in lines] == paged
    assert int(response.headers["X-Total-Rows"]) == len(paged)  # a client can check that it got them all
    assert "Foreign" not in response.get_data(as_text=True)


def test_ndjson_carries_escapes_control_characters_and_nulls_exactly(api_get, factory, tenant):
    """What PostgreSQL's COPY text format escapes (tab, line breaks, backslash, and a value that reads like its
    NULL marker) and what JSON must escape come back as the pages give them."""
    names = ["\\N", "\\", "back\\slash", "tab\there", "lines\r\nand\vmore\b\f", "ctrl\x01\x1f\x7f",
             "sep\u2028ar", "Zoë 🎓"]
    for number, name in enumerate(names):
        factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle, first_name=name,
                            last_name=name[::-1], phone=None if number % 2 else "+250788000000")
    paged = walk(api_get, tenant, LIST, {"limit": 3})
    body = api_get(tenant, EXPORT, {"format": "ndjson"}).get_data(as_text=True)
    assert body.endswith("\n")
    assert [json.loads(line) for line in body[:-1].split("\n")] == paged  # NDJSON lines end at LF only
    assert {record["personal"]["first_name"] for record in paged} == set(names)


@pytest.mark.skipif(TEST_DB != "postgres", reason="COPY's chunks exist on PostgreSQL only")
def test_ndjson_rows_cut_anywhere_between_copy_chunks_come_out_whole(api_get, tenant, records, monkeypatch):
    whole_rows = ndjson_export.postgres_copy

    def in_seven_byte_pieces(*args, **kwargs):
        for chunk in whole_rows(*args, **kwargs):
            yield from (chunk[start:start + 7] for start in range(0, len(chunk), 7))

    monkeypatch.setattr(ndjson_export, "postgres_copy", in_seven_byte_pieces)
    paged = walk(api_get, tenant, LIST, {"limit": 4})
    lines = api_get(tenant, EXPORT, {"format": "ndjson"}).get_data(as_text=True).splitlines()
    assert [json.loads(line) for line in lines] == paged


@pytest.mark.parametrize("params", [{}, {"paid": "false"}, {"program": "Alpha University Nursing"}])
def test_csv_export_is_exactly_the_csv_pages(api_get, tenant, records, params):
    paged, cursor = [], None
    while True:
        page = api_get(tenant, LIST, {**params, "format": "csv", "limit": 5, **({"cursor": cursor} if cursor else {})})
        rows = csv_rows(page.get_data(as_text=True))
        header, paged = rows[0], paged + rows[1:]
        if page.headers["X-Has-Next"] == "false":
            break
        cursor = page.headers["X-Cursor"]
    response = api_get(tenant, EXPORT, params)  # csv is the default
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
    exported = csv_rows(response.get_data(as_text=True))
    assert exported[0] == header and exported[1:] == paged and len(paged) > 0
    assert int(response.headers["X-Total-Rows"]) == len(paged)


def test_empty_result_is_an_empty_stream_or_a_lone_header(api_get, client, tenant):
    # (an empty body cannot be checked against the OpenAPI document: openapi-core reports it as missing)
    empty = client.get(EXPORT, query_string={"format": "ndjson"}, headers=tenant.headers)
    assert (empty.status_code, empty.get_data()) == (200, b"")
    assert csv_rows(api_get(tenant, EXPORT).get_data(as_text=True))[1:] == []


@pytest.mark.parametrize("params, message", [
    ({"format": "xml"}, "format must be csv or ndjson"),
    ({"cycle": "cyc_doesnotexist"}, "cycle must be"),
    ({"decision": "maybe"}, "decision must be one of"),
    ({"submitted_after": "yesterday"}, "submitted_after must be"),
])
def test_bad_parameters_are_a_400_before_any_byte_is_streamed(api_get, tenant, records, params, message):
    response = api_get(tenant, EXPORT, params)
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == 400 and message in body["error"]


def test_a_foreign_cycle_is_refused_like_a_missing_one(api_get, tenant, other_tenant, records):
    response = api_get(tenant, EXPORT, {"cycle": other_tenant.cycle.id, "format": "ndjson"})
    assert response.status_code == 400


def test_the_trial_key_cannot_export(api_get, records):
    response = api_get(None, EXPORT, headers={"Authorization": "Bearer sk_trial_demo"})
    assert response.status_code == 401


@pytest.mark.parametrize("params", [{}, {"paid": "false"},
                                    {"decision": "accepted", "program": "Alpha University Nursing"},
                                    {"submitted_after": "2026-05-01T09:05:00Z"}])
def test_the_total_leaves_out_erased_applicants_like_the_rows(app, api_get, tenant, records, params):
    """Counted filters take the total from the counter tables, less erased applicants; others count the rows."""
    with app.app_context():
        applications = db.session.scalars(select(Application.id).where(
            Application.institution_id == tenant.institution.id).order_by(Application.submitted_at)).all()
        erased = set(applications[1::3])
        for application_id in erased:
            erase(InstitutionScope(tenant.institution.id), application_id, actor="test", reason="asked in writing",
                  source="cli", audit=lambda entry: None, force=True)
    for output in ("csv", "ndjson"):
        response = api_get(tenant, EXPORT, {**params, "format": output})
        text = response.get_data(as_text=True)
        if output == "csv":
            sent = [row[0] for row in csv_rows(text)[1:]]
        else:
            sent = [json.loads(line)["id"] for line in text.splitlines()]
        assert int(response.headers["X-Total-Rows"]) == len(sent) > 0
        assert not erased & set(sent)
