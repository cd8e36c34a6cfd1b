"""Streamed and CSV responses: every check runs before the first byte, and the record count is in a header.

A bad filter discovered inside a streaming generator would surface after the status line was sent: a 200
followed by a broken stream. So the refusals are checked through the Flask test client and through a real
HTTP server, where that failure would show as a transport error instead of a clean 400.
"""
from __future__ import annotations

import csv
import io
import re
import zipfile
from decimal import Decimal

import pytest
import requests
from sqlalchemy import event

from core.applications.csv_export import export_applications_csv
from core.db import db
from core.models import VerificationCharge, utcnow
from core.scoping import InstitutionScope
from portal.limiter import limiter
from tests.conftest import REDIS_URL
from tests.live_server import base_url, serving
from tests.ops.processes import Processes, app_environment
from tests.api.conftest import parse_csv

LIST = "/api/v1/applications"
ZIP = "/api/v1/applications/zip"
EXPORT = "/applicants/export.csv"
PASSWORD = "correct-horse-1"
_CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


@pytest.fixture
def live_server(app):
    """The app on a real HTTP/1.1 server (werkzeug, threaded) on a free loopback port."""
    with serving(app) as server:
        yield base_url(server)


@pytest.fixture(autouse=True)
def _fresh_login_counters(app):
    with app.app_context():
        limiter.reset()


def sign_in(session, base: str, email: str) -> None:
    token = _CSRF_META.search(session.get(f"{base}/login", timeout=30).text).group(1)
    response = session.post(f"{base}/login", data={"email": email, "password": PASSWORD, "csrf_token": token},
                            allow_redirects=False, timeout=30)
    assert response.status_code == 302, response.text


def records(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.fixture
def two_tenants(factory, tenant, other_tenant):
    for number in range(5):
        factory.application(tenant.institution, program=tenant.program if number % 2 else tenant.other_program,
                            cycle=tenant.cycle, first_name=f"Line\nbreak {number}")
    factory.application(other_tenant.institution, program=other_tenant.program, cycle=other_tenant.cycle)
    return tenant, other_tenant


def bad_filters(tenant, other_tenant) -> list[tuple[str, str]]:
    return [("cycle", "No such intake"), ("cycle", other_tenant.cycle.id), ("program", other_tenant.program.id)]


# The API --------------------------------------------------------------------------------------------


def test_csv_pages_refuse_unknown_and_foreign_filters_with_json(api_get, two_tenants):
    tenant, other_tenant = two_tenants
    for name, value in bad_filters(tenant, other_tenant):
        response = api_get(tenant, LIST, {"format": "csv", name: value})
        assert response.status_code == 400, (name, value)
        assert response.get_json()["code"] == 400
        assert name in response.get_json()["error"]


def test_csv_pages_count_their_records_in_x_total_rows(api_get, two_tenants):
    tenant, _ = two_tenants
    first = api_get(tenant, LIST, {"format": "csv", "limit": 3})
    assert first.headers["X-Total-Rows"] == "3" and len(parse_csv(first)) == 3
    rest = api_get(tenant, LIST, {"format": "csv", "limit": 3, "cursor": first.headers["X-Cursor"]})
    assert rest.headers["X-Total-Rows"] == "2" and len(parse_csv(rest)) == 2
    empty = api_get(tenant, LIST, {"format": "csv", "submitted_after": "2100-01-01"})
    assert empty.headers["X-Total-Rows"] == "0" and parse_csv(empty) == []
    ids = [row["id"] for row in parse_csv(first)]
    by_id = api_get(tenant, f"{LIST}/by-id", {"format": "csv", "ids": ",".join([*ids, "app_missing"])})
    assert by_id.headers["X-Total-Rows"] == "3" and by_id.headers["X-Missing"] == "app_missing"


def test_the_zip_refuses_unknown_and_foreign_filters_before_streaming(client, two_tenants):
    tenant, other_tenant = two_tenants
    for name, value in bad_filters(tenant, other_tenant):
        response = client.get(ZIP, query_string={name: value}, headers=tenant.headers)
        assert response.status_code == 400, (name, value)
        assert response.mimetype == "application/json" and name in response.get_json()["error"]


def test_over_a_real_server_refusals_are_whole_responses_and_streams_are_complete(live_server, two_tenants):
    tenant, other_tenant = two_tenants
    for path in (LIST, ZIP):
        for name, value in bad_filters(tenant, other_tenant):
            params = {name: value, **({"format": "csv"} if path == LIST else {})}
            response = requests.get(live_server + path, params=params, headers=tenant.headers, timeout=30)
            assert response.status_code == 400, (path, name, response.text)
            assert name in response.json()["error"]

    response = requests.get(live_server + ZIP, params={"cycle": tenant.cycle.id}, headers=tenant.headers,
                            timeout=30)
    assert response.status_code == 200
    with zipfile.ZipFile(io.BytesIO(response.content)) as bundle:
        assert bundle.testzip() is None


# The portal export ----------------------------------------------------------------------------------


def test_portal_export_refuses_unknown_and_foreign_filters_with_a_page(portal_client, two_tenants):
    tenant, other_tenant = two_tenants
    for name, value in bad_filters(tenant, other_tenant):
        response = portal_client.get(EXPORT, query_string={name: value})
        assert response.status_code == 400, (name, value)
        assert response.mimetype == "text/html"
        assert name in response.get_data(as_text=True)


def test_portal_export_counts_its_records_in_x_total_rows(portal_client, two_tenants):
    tenant, _ = two_tenants
    everything = portal_client.get(EXPORT)
    assert everything.status_code == 200
    assert everything.headers["X-Total-Rows"] == "5" == str(len(records(everything.get_data(as_text=True))))
    filtered = portal_client.get(EXPORT, query_string={"program": tenant.program.name})
    assert filtered.headers["X-Total-Rows"] == "2" == str(len(records(filtered.get_data(as_text=True))))


def test_portal_export_over_a_real_server(live_server, factory, two_tenants):
    tenant, other_tenant = two_tenants
    user = factory.user(tenant.institution, email="registrar@alpha.example")
    session = requests.Session()
    sign_in(session, live_server, user.email)

    for name, value in bad_filters(tenant, other_tenant):
        response = session.get(live_server + EXPORT, params={name: value}, timeout=30)
        assert response.status_code == 400, (name, value, response.status_code)
        assert response.headers["Content-Type"].startswith("text/html")
        assert name in response.text

    response = session.get(live_server + EXPORT, params={"cycle": tenant.cycle.id}, timeout=30)
    assert response.status_code == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert int(response.headers["X-Total-Rows"]) == len(records(response.text)) == 5


def test_a_count_and_its_rows_come_from_one_snapshot(app, factory, portal_client, two_tenants):
    """A row committed between the count and the start of the rows' query is neither counted nor sent."""
    tenant, _ = two_tenants
    committed = []

    def commit_a_row_after_the_count(connection, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT COUNT(") and not committed:
            committed.append(factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle))

    with app.test_request_context():
        event.listen(db.engine, "after_cursor_execute", commit_a_row_after_the_count)
        try:
            export = export_applications_csv(InstitutionScope(tenant.institution.id), {})
        finally:
            event.remove(db.engine, "after_cursor_execute", commit_a_row_after_the_count)
        text = b"".join(export).decode()
    assert committed, "the row was committed while the export was open"
    assert export.total_rows == 5 == len(records(text))
    later = portal_client.get(EXPORT)
    assert later.headers["X-Total-Rows"] == "6" == str(len(records(later.get_data(as_text=True))))


@pytest.fixture
def portal_client(app, factory, tenant):
    user = factory.user(tenant.institution, email="officer@alpha.example")
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = _CSRF_META.search(page).group(1)
    response = client.post("/login", data={"email": user.email, "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 302
    return client



def test_verification_usage_csv_streams_whole_under_gunicorn(app, database_url, factory, tenant, tmp_path):
    """The usage CSV is streamed after its view returned: under gunicorn its rows once came from the request's
    session, which was gone by then (the download broke off after the header)."""
    user = factory.user(tenant.institution, email="bursar@alpha.example")
    with app.app_context():
        db.session.add_all([VerificationCharge(
            institution_id=tenant.institution.id, actor="test", issuer="KNEC", level="KCSE", outcome="authentic",
            amount=Decimal("1.50"), currency="USD", identifiers_hash=f"{number:064d}",
            period=utcnow().strftime("%Y-%m")) for number in range(1200)])  # more than one batch of the query
        db.session.commit()
    processes = Processes(tmp_path)
    try:
        base = processes.gunicorn(app_environment(database_url, REDIS_URL, tmp_path,
                                                  PORTAL_LOGIN_RATE_LIMIT="1000/minute"), workers=1)
        session = requests.Session()
        sign_in(session, base, user.email)
        response = session.get(f"{base}/verification/usage.csv", timeout=60)
        assert response.status_code == 200
        rows = records(response.text)
        assert len(rows) == 1200 and {row["issuer"] for row in rows} == {"KNEC"}
    finally:
        processes.stop_all()
