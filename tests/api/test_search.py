"""GET /api/v1/applications/search: name, full name, email, id; case and accents; filters and paging."""
from __future__ import annotations

import pytest

from tests.api.conftest import parse_csv, walk

SEARCH = "/api/v1/applications/search"


@pytest.fixture
def people(factory, tenant):
    def make(first, last, email):
        return factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                   first_name=first, last_name=last, email=email)
    return {
        "aimee": make("Aimée", "Nyiramasuhuko", "aimee.n@example.rw"),
        "jean_paul": make("Jean-Paul", "Habimana", "jp.habimana@mail.example.org"),
        "clementine": make("Clémentine", "Uwase", "c_uwase@example.rw"),
        "otieno": make("Brian", "Otieno", "brian.otieno100%@example.ke"),
        "aimee_ug": make("Aimee", "Nakato", "nakato@example.ug"),
    }


def found(api_get, tenant, q, **params) -> set[str]:
    response = api_get(tenant, SEARCH, {"q": q, **params})
    assert response.status_code == 200, response.get_json()
    return {record["id"] for record in response.get_json()["data"]}


@pytest.mark.parametrize("q, expected", [
    ("Aimée", {"aimee", "aimee_ug"}),
    ("aimee", {"aimee", "aimee_ug"}),
    ("AIMEE", {"aimee", "aimee_ug"}),
    ("aimée", {"aimee", "aimee_ug"}),
    ("clementine", {"clementine"}),
    ("CLÉMENTINE UWASE", {"clementine"}),
    ("Clementine Uwase", {"clementine"}),
    ("nyiramasuhuko", {"aimee"}),
    ("Aimée Nyiramasuhuko", {"aimee"}),
    ("jean-paul habimana", {"jean_paul"}),
    ("jp.habimana@mail.example.org", {"jean_paul"}),
    ("JP.Habimana@", {"jean_paul"}),
    ("example.rw", {"aimee", "clementine"}),
    ("c_uwase", {"clementine"}),
    ("c%uwase", set()),
    ("100%", {"otieno"}),
    ("_", {"clementine"}),
    ("  otieno  ", {"otieno"}),
    ("nobody", set()),
])
def test_matches_names_full_names_and_emails(api_get, tenant, people, q, expected):
    assert found(api_get, tenant, q) == {people[name].id for name in expected}


def test_matches_the_application_id_exactly(api_get, tenant, people):
    target = people["otieno"]
    assert found(api_get, tenant, target.id) == {target.id}
    assert found(api_get, tenant, target.id[:-1]) == set(), "an id matches exactly, not as a prefix"


def test_list_filters_combine_with_q(api_get, factory, tenant, people):
    interview = factory.application(tenant.institution, program=tenant.other_program, cycle=tenant.cycle,
                                    first_name="Aimée", last_name="Mukamana", stage="interview")
    assert found(api_get, tenant, "aimee", stage="interview") == {interview.id}
    assert found(api_get, tenant, "aimee", program=tenant.other_program.id) == {interview.id}


def test_search_pages_and_csv(api_get, factory, tenant):
    made = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                last_name="Kwizera") for _ in range(7)]
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle, last_name="Other")
    records = walk(api_get, tenant, SEARCH, {"q": "kwizera", "limit": 3})
    assert [r["id"] for r in records] == [a.id for a in sorted(made, key=lambda a: (a.submitted_at, a.id))]
    response = api_get(tenant, SEARCH, {"q": "kwizera", "limit": 3, "format": "csv"})
    assert len(parse_csv(response)) == 3
    assert response.headers["X-Has-Next"] == "true"


@pytest.mark.parametrize("params, message", [
    ({}, "q is required"),
    ({"q": ""}, "q must be between 1 and 200 characters"),
    ({"q": "   "}, "q must be between 1 and 200 characters"),
    ({"q": "x" * 201}, "q must be between 1 and 200 characters"),
])
def test_q_errors(api_get, tenant, params, message):
    response = api_get(tenant, SEARCH, params)
    assert response.status_code == 400
    assert response.get_json() == {"code": 400, "error": message, "errors": [{"location": "query", "name": "q", "message": message}]}


def test_q_of_200_characters_is_accepted(api_get, tenant, people):
    assert found(api_get, tenant, "x" * 200) == set()


def test_other_parameter_errors_name_the_parameter(api_get, tenant):
    response = api_get(tenant, SEARCH, {"q": "a", "limit": "5000"})
    assert response.get_json()["errors"][0]["name"] == "limit"
    response = api_get(tenant, SEARCH, {"q": "a", "format": "tsv"})
    assert response.get_json()["error"] == "format must be json or csv"
