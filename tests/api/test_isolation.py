"""Two institutions: neither key ever sees the other's records, on every read endpoint."""
from __future__ import annotations

import pytest

from tests.api.conftest import parse_csv


@pytest.fixture
def both(factory, tenant, other_tenant):
    """Same names and emails in both institutions, so only scoping can tell them apart."""
    def make(owner):
        return [factory.application(owner.institution, program=owner.program, cycle=owner.cycle,
                                    first_name="Aimée", last_name="Uwase", email=f"aimee{n}@example.rw")
                for n in range(3)]
    return {"alpha": make(tenant), "beta": make(other_tenant)}


def own_and_foreign(both, name):
    own = {a.id for a in both[name]}
    foreign = {a.id for key, apps in both.items() if key != name for a in apps}
    return own, foreign


@pytest.mark.parametrize("path, params", [
    ("/api/v1/applications", {}),
    ("/api/v1/applications", {"format": "csv"}),
    ("/api/v1/applications/search", {"q": "aimee uwase"}),
    ("/api/v1/applications/search", {"q": "aimee", "format": "csv"}),
])
def test_lists_only_show_own_records(api_get, tenant, other_tenant, both, path, params):
    for name, owner in (("alpha", tenant), ("beta", other_tenant)):
        own, _ = own_and_foreign(both, name)
        response = api_get(owner, path, params)
        if params.get("format") == "csv":
            seen = {row["id"] for row in parse_csv(response)}
        else:
            seen = {record["id"] for record in response.get_json()["data"]}
        assert seen == own


def test_search_by_a_foreign_id_finds_nothing(api_get, tenant, both):
    for foreign in both["beta"]:
        body = api_get(tenant, "/api/v1/applications/search", {"q": foreign.id}).get_json()
        assert body["data"] == []


def test_by_id_reports_foreign_ids_as_missing(api_get, tenant, both):
    own, foreign = own_and_foreign(both, "alpha")
    requested = sorted(own | foreign)
    body = api_get(tenant, "/api/v1/applications/by-id", {"ids": ",".join(requested)}).get_json()
    assert {record["id"] for record in body["data"]} == own
    assert set(body["missing"]) == foreign


@pytest.mark.parametrize("parameter", ["cycle", "program"])
def test_foreign_cycle_or_program_filter_is_rejected_like_an_unknown_one(api_get, tenant, other_tenant, both,
                                                                         parameter):
    foreign_value = getattr(other_tenant, parameter).id
    response = api_get(tenant, "/api/v1/applications", {parameter: foreign_value})
    unknown = api_get(tenant, "/api/v1/applications", {parameter: "cyc_doesnotexist0000000"})
    assert response.status_code == unknown.status_code == 400
    assert response.get_json() == unknown.get_json()


def test_cycles_only_show_own_cycles(api_get, tenant, other_tenant, both):
    alpha = {c["id"] for c in api_get(tenant, "/api/v1/cycles").get_json()["data"]}
    beta = {c["id"] for c in api_get(other_tenant, "/api/v1/cycles").get_json()["data"]}
    assert alpha == {tenant.cycle.id}
    assert beta == {other_tenant.cycle.id}


@pytest.mark.parametrize("path, params", [
    ("/api/v1/applications", {"limit": 1}),
    ("/api/v1/applications/search", {"q": "aimee", "limit": 1}),
])
def test_a_cursor_cannot_be_used_by_another_institution(api_get, tenant, other_tenant, both, path, params):
    first = api_get(tenant, path, params).get_json()
    response = api_get(other_tenant, path, {**params, "cursor": first["cursor"]})
    assert response.status_code == 400
    assert response.get_json()["error"] == "cursor does not match this query"


def test_cycle_cursor_cannot_be_used_by_another_institution(api_get, factory, tenant, other_tenant):
    factory.cycle(tenant.institution, name="Second")
    factory.cycle(other_tenant.institution, name="Second")
    first = api_get(tenant, "/api/v1/cycles", {"limit": 1}).get_json()
    response = api_get(other_tenant, "/api/v1/cycles", {"limit": 1, "cursor": first["cursor"]})
    assert response.get_json()["error"] == "cursor does not match this query"


def test_revoked_key_is_refused(api_get, app, tenant, both):
    from sqlalchemy import select

    from core.db import db
    from core.accounts.api_keys import revoke_api_key
    from core.models import ApiKey

    with app.app_context():
        key_id = db.session.scalar(select(ApiKey.id).where(ApiKey.institution_id == tenant.institution.id))
        revoke_api_key(key_id)
    assert api_get(tenant, "/api/v1/applications").status_code == 401
