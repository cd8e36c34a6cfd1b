"""GET /api/v1/applications/by-id: ids as a list and/or repeated, limits, and the missing list."""
from __future__ import annotations

import pytest

from core.models import new_id
from tests.api.conftest import parse_csv

BY_ID = "/api/v1/applications/by-id"


@pytest.fixture
def three(factory, tenant):
    return [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
            for _ in range(3)]


def test_comma_separated_ids_in_requested_order(api_get, tenant, three):
    wanted = [three[2].id, three[0].id]
    response = api_get(tenant, BY_ID, {"ids": ",".join(wanted)})
    assert response.status_code == 200
    body = response.get_json()
    assert [r["id"] for r in body["data"]] == wanted
    assert body["missing"] == []
    assert body["code"] == 200
    assert body["data"][0]["personal"]["first_name"] == "Aimée"


def test_repeated_and_comma_separated_ids_combine(client, tenant, three):
    from tests.openapi_check import assert_conforms

    query = f"ids={three[0].id},{three[1].id}&ids={three[2].id}&ids=+{three[0].id}+"
    response = client.get(f"{BY_ID}?{query}", headers=tenant.headers)
    assert_conforms(response)
    assert [r["id"] for r in response.get_json()["data"]] == [a.id for a in three]


def test_missing_lists_unknown_and_foreign_ids_alike(api_get, factory, tenant, other_tenant, three):
    foreign = factory.application(other_tenant.institution, program=other_tenant.program,
                                  cycle=other_tenant.cycle)
    unknown = new_id("app")
    response = api_get(tenant, BY_ID, {"ids": f"{unknown},{three[1].id},{foreign.id},not-an-id"})
    body = response.get_json()
    assert [r["id"] for r in body["data"]] == [three[1].id]
    assert body["missing"] == [unknown, foreign.id, "not-an-id"]


def test_ids_is_required(api_get, tenant):
    for params in ({}, {"ids": ""}, {"ids": " , ,"}):
        response = api_get(tenant, BY_ID, params)
        assert response.status_code == 400
        assert response.get_json() == {"code": 400, "error": "ids is required", "errors": [{"location": "query", "name": "ids", "message": "ids is required"}]}


def test_at_most_100_ids(api_get, tenant, three):
    hundred = [three[0].id] + [new_id("app") for _ in range(99)]
    ok = api_get(tenant, BY_ID, {"ids": ",".join(hundred)})
    assert ok.status_code == 200
    assert len(ok.get_json()["missing"]) == 99
    too_many = api_get(tenant, BY_ID, {"ids": ",".join(hundred + [new_id("app")])})
    assert too_many.status_code == 400
    assert too_many.get_json() == {"code": 400, "error": "too many ids: at most 100", "errors": [{"location": "query", "name": "ids", "message": "too many ids: at most 100"}]}


def test_a_repeated_id_counts_once(api_get, tenant, three):
    response = api_get(tenant, BY_ID, {"ids": ",".join([three[0].id] * 150)})
    assert response.status_code == 200
    assert [r["id"] for r in response.get_json()["data"]] == [three[0].id]


def test_csv_with_missing_header(api_get, tenant, three):
    unknown = new_id("app")
    response = api_get(tenant, BY_ID, {"ids": f"{three[1].id},{unknown}", "format": "csv"})
    assert [row["id"] for row in parse_csv(response)] == [three[1].id]
    assert response.headers["X-Missing"] == unknown


def test_invalid_format(api_get, tenant, three):
    response = api_get(tenant, BY_ID, {"ids": three[0].id, "format": "pdf"})
    assert response.get_json() == {"code": 400, "error": "format must be json or csv", "errors": [{"location": "query", "name": "format", "message": "format must be json or csv"}]}
