"""A page statement is built once per shape and run again with each request's values (core/applications/listing.py
`_page_statement`): requests of the same shape with other values must never see the first one's values."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

LIST = "/api/v1/applications"
SEARCH = "/api/v1/applications/search"


@pytest.fixture
def spread(factory, tenant, other_tenant):
    """Applications of every stage, decision and payment, in both programs, with distinct names."""
    start = datetime(2026, 4, 1, 8, 0)
    for number, (stage, decision, paid, first_name) in enumerate([
            ("submitted", "none", False, "Amani"), ("interview", "accepted", True, "Bahati"),
            ("submitted", "rejected", True, "Chausiku"), ("interview", "none", False, "Dalila"),
            ("completed", "accepted", False, "Eshe"), ("submitted", "accepted", True, "Faraji")]):
        factory.application(tenant.institution, program=tenant.program if number % 2 else tenant.other_program,
                            cycle=tenant.cycle, stage=stage, decision=decision, paid=paid, first_name=first_name,
                            last_name="Ndayisenga", submitted_at=start + timedelta(hours=number))
    factory.application(other_tenant.institution, program=other_tenant.program, cycle=other_tenant.cycle,
                        stage="submitted", first_name="Amani", last_name="Foreign")


def names(response) -> list[str]:
    assert response.status_code == 200, response.get_json()
    return [record["personal"]["first_name"] for record in response.get_json()["data"]]


def test_the_same_filters_with_other_values_answer_for_their_own_values(api_get, tenant, spread):
    for _ in range(2):  # the second round runs statements built in the first
        assert names(api_get(tenant, LIST, {"stage": "interview", "paid": "true"})) == ["Bahati"]
        assert names(api_get(tenant, LIST, {"stage": "submitted", "paid": "true"})) == ["Chausiku", "Faraji"]
        assert names(api_get(tenant, LIST, {"stage": "submitted", "paid": "false"})) == ["Amani"]
        assert names(api_get(tenant, LIST, {"decision": "accepted"})) == ["Bahati", "Eshe", "Faraji"]
        assert names(api_get(tenant, LIST, {"decision": "rejected"})) == ["Chausiku"]
        assert names(api_get(tenant, LIST, {"program": tenant.program.id})) == ["Bahati", "Dalila", "Faraji"]
        assert names(api_get(tenant, LIST, {"program": tenant.other_program.id})) == ["Amani", "Chausiku", "Eshe"]
        assert names(api_get(tenant, LIST, {"submitted_after": "2026-04-01T12:00:00Z"})) == ["Eshe", "Faraji"]
        assert names(api_get(tenant, LIST, {"submitted_after": "2026-04-01T10:00:00Z"})) == [
            "Chausiku", "Dalila", "Eshe", "Faraji"]


def test_searches_of_the_same_shape_find_their_own_text(api_get, tenant, spread):
    for _ in range(2):
        assert names(api_get(tenant, SEARCH, {"q": "bahati"})) == ["Bahati"]
        assert names(api_get(tenant, SEARCH, {"q": "dalila"})) == ["Dalila"]
        assert names(api_get(tenant, SEARCH, {"q": "amani"})) == ["Amani"]  # not the other institution's


def walked_names(api_get, tenant, params: dict, most_pages: int) -> list[str]:
    """The first names of every page, following cursors (at most `most_pages`: a cursor that does not move
    must fail the test, not loop)."""
    found, cursor = [], None
    for _ in range(most_pages):
        body = api_get(tenant, LIST, {**params, **({"cursor": cursor} if cursor else {})}).get_json()
        found += [record["personal"]["first_name"] for record in body["data"]]
        if not body["has_next"]:
            return found
        cursor = body["cursor"]
    raise AssertionError(f"still more pages after {most_pages}: {found}")


def test_every_cursor_continues_from_its_own_position(api_get, tenant, spread):
    for _ in range(2):
        assert walked_names(api_get, tenant, {"limit": 1}, 6) == [
            "Amani", "Bahati", "Chausiku", "Dalila", "Eshe", "Faraji"]
        assert walked_names(api_get, tenant, {"limit": 2, "paid": "true"}, 2) == ["Bahati", "Chausiku", "Faraji"]


def test_two_institutions_with_the_same_query_see_only_their_own(api_get, tenant, other_tenant, spread):
    for _ in range(2):
        assert names(api_get(other_tenant, LIST, {"stage": "submitted"})) == ["Amani"]
        assert names(api_get(tenant, LIST, {"stage": "submitted"})) == ["Amani", "Chausiku", "Faraji"]
        assert [record["personal"]["last_name"] for record in api_get(
            other_tenant, LIST, {"stage": "submitted"}).get_json()["data"]] == ["Foreign"]
