"""The application's human reference in the API record (JSON and CSV), and found by search as it is read out."""
from __future__ import annotations

import re

from core.applications.references import CROCKFORD_ALPHABET
from tests.api.conftest import parse_csv

REFERENCE = re.compile(r"^AU-\d{4}-[0-9A-HJKMNP-TV-Z]{5}$")  # Alpha University; no I, L, O or U


def test_crockford_leaves_out_the_letters_read_as_digits_or_words():
    assert len(set(CROCKFORD_ALPHABET)) == 32 and not set("ILOU") & set(CROCKFORD_ALPHABET)


def test_every_record_has_its_reference(api_get, factory, tenant):
    applications = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
                    for _ in range(12)]
    response = api_get(tenant, "/api/v1/applications", {"limit": 50})  # checked against the OpenAPI schema
    records = response.get_json()["data"]
    by_id = {record["id"]: record["reference"] for record in records}
    assert by_id == {application.id: application.reference for application in applications}
    assert all(REFERENCE.match(reference) for reference in by_id.values()), by_id
    assert len(set(by_id.values())) == len(by_id)
    assert list(records[0])[:3] == ["id", "reference", "applicant_id"]
    year = applications[0].submitted_at.year
    assert applications[0].reference.startswith(f"AU-{year}-")

    rows = parse_csv(api_get(tenant, "/api/v1/applications", {"limit": 50, "format": "csv"}))
    assert {row["id"]: row["reference"] for row in rows} == by_id


def test_search_finds_the_reference_as_a_person_types_it(api_get, factory, tenant, other_tenant):
    target = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    foreign = factory.application(other_tenant.institution, program=other_tenant.program, cycle=other_tenant.cycle)

    def found(tenant_, q):
        response = api_get(tenant_, "/api/v1/applications/search", {"q": q})
        assert response.status_code == 200, response.get_json()
        return [record["id"] for record in response.get_json()["data"]]

    typed = target.reference.lower().replace("0", "o").replace("1", "l")
    for q in (target.reference, typed, f" {target.reference} "):
        assert found(tenant, q) == [target.id], q
    assert found(tenant, foreign.reference) == []  # another institution's reference finds nothing
