"""Statement timeouts of searches and counts: a statement that runs past its limit (here one made slow on
purpose: pg_sleep on PostgreSQL, a long recursive count on SQLite) is cut, and the answer says so (503 with
Retry-After, "narrow it"; the portal's count "unavailable"), never a 500."""
from __future__ import annotations

import pytest
from sqlalchemy import event

from core.db import db
from tests.portal.conftest import _fresh_login_counters  # noqa: F401 (autouse fixture: these tests sign in)

SEARCH = "/api/v1/applications/search"


def slow_sql(dialect: str, seconds: float) -> str:
    """A statement that takes about `seconds` or more (SQLite: about 3 million rows a second, quiet)."""
    if dialect == "postgresql":
        return f"SELECT pg_sleep({seconds})"
    return (f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT {int(seconds * 3_000_000)}) "
            "SELECT count(*) FROM n")


@pytest.fixture
def applications(factory, tenant):
    return [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                first_name=first, last_name="Uwase") for first in ("Aimée", "Jean", "Claire")]


@pytest.fixture
def slow_statements(app, monkeypatch):
    """`slow_statements(matches, seconds)`: every statement for which `matches(sql)` is true first runs a
    statement of `seconds` or more (default 10: a limit that fails to cut it shows) on the same connection;
    the limits become 100 ms."""
    monkeypatch.setitem(app.config, "SEARCH_STATEMENT_TIMEOUT_MS", 100)
    monkeypatch.setitem(app.config, "COUNT_STATEMENT_TIMEOUT_MS", 100)
    with app.app_context():
        engine = db.engine
    listeners = []

    def install(matches, seconds: float = 10):
        def before(connection, cursor, statement, parameters, context, executemany):
            if matches(statement):
                cursor.execute(slow_sql(connection.dialect.name, seconds))
        event.listen(engine, "before_cursor_execute", before)
        listeners.append(before)
    yield install
    for before in listeners:
        event.remove(engine, "before_cursor_execute", before)


def is_search_page(sql: str) -> bool:
    return "search_text LIKE" in sql and not sql.lstrip().upper().startswith("SELECT COUNT")


def is_count(sql: str) -> bool:
    return sql.lstrip().upper().startswith("SELECT COUNT(*)")


def test_an_api_search_cut_by_its_timeout_says_to_narrow_it(api_get, tenant, applications, slow_statements):
    slow_statements(is_search_page)
    response = api_get(tenant, SEARCH, {"q": "uwase"})
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.headers["Retry-After"] == "2"
    body = response.get_json()
    assert body["reason"] == "took_too_long" and "narrow it" in body["error"]
    assert api_get(tenant, "/api/v1/applications").status_code == 200  # the next request is not affected


def test_a_portal_search_cut_by_its_timeout_is_a_plain_503_page(tenant, applications, staff_of, slow_statements):
    staff = staff_of(tenant)
    slow_statements(is_search_page)
    page = staff.get("/applicants", query_string={"q": "uwase"})
    assert page.status_code == 503 and page.headers["Retry-After"] == "2"
    assert "The search took too long. Narrow it" in page.get_data(as_text=True)


@pytest.mark.parametrize("query", [{"q": "uwase"}, {"submitted_after": "2000-01-01"}])
def test_a_portal_count_cut_by_its_timeout_says_it_is_unavailable(tenant, applications, staff_of, slow_statements,
                                                                   query):
    staff = staff_of(tenant)
    slow_statements(is_count)
    page = staff.get("/applicants", query_string=query)
    html = page.get_data(as_text=True)
    assert page.status_code == 200, html[:500]
    assert "The number of matching applicants is unavailable right now" in html
    assert html.count('href="/applicants/app_') == 3, "the rows are still shown"


def test_the_time_limits_end_with_the_search_and_the_count(tenant, applications, staff_of, slow_statements):
    """The page's later statements (here the cycles of the filter form, run after the search and the count in
    the same transaction) are not held to the search's limit."""
    staff = staff_of(tenant)
    slow_statements(lambda sql: "FROM cycles" in sql and "ORDER BY cycles.opens_at DESC" in sql, seconds=0.5)
    page = staff.get("/applicants", query_string={"q": "uwase"})
    assert page.status_code == 200, page.get_data(as_text=True)[:500]
    assert "3 applicants match" in page.get_data(as_text=True)
