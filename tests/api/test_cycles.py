"""GET /api/v1/cycles: cycle records with programs and status, keyset pagination, CSV."""
from __future__ import annotations

from datetime import timedelta

from core.models import utcnow
from core.applications.records import CYCLE_COLUMNS
from tests.api.conftest import parse_csv, walk

CYCLES = "/api/v1/cycles"


def test_cycle_records_with_programs_and_status(api_get, factory, tenant):
    now = utcnow().replace(microsecond=0)
    past = factory.cycle(tenant.institution, programs=[tenant.program], name="2024 Intake",
                         opens_at=now - timedelta(days=400), closes_at=now - timedelta(days=300))
    future = factory.cycle(tenant.institution, programs=[], name="2028 Intake",
                           opens_at=now + timedelta(days=300), closes_at=now + timedelta(days=400))

    body = api_get(tenant, CYCLES).get_json()

    assert body["code"] == 200 and body["has_next"] is False
    assert [c["id"] for c in body["data"]] == [past.id, tenant.cycle.id, future.id]
    first, current, last = body["data"]
    assert first == {
        "id": past.id, "name": "2024 Intake",
        "opens_at": (now - timedelta(days=400)).isoformat() + "Z",
        "closes_at": (now - timedelta(days=300)).isoformat() + "Z",
        "status": "closed",
        "programs": [{"id": tenant.program.id, "name": "Alpha University Computer Science"}],
    }
    assert current["status"] == "open"
    assert sorted(p["name"] for p in current["programs"]) == ["Alpha University Computer Science",
                                                              "Alpha University Nursing"]
    assert last["status"] == "upcoming" and last["programs"] == []


def test_cycles_walk_and_csv(api_get, factory, tenant):
    start = utcnow()
    for number in range(6):
        factory.cycle(tenant.institution, name=f"Cycle {number}", opens_at=start + timedelta(days=number))
    records = walk(api_get, tenant, CYCLES, {"limit": 2})
    assert len(records) == 7 and len({r["id"] for r in records}) == 7
    assert [r["opens_at"] for r in records] == sorted(r["opens_at"] for r in records)

    response = api_get(tenant, CYCLES, {"format": "csv", "limit": 1})
    assert response.get_data(as_text=True).splitlines()[0] == ",".join(CYCLE_COLUMNS)
    [row] = parse_csv(response)
    assert row["id"] == records[0]["id"]
    assert row["programs.id"].split("; ") == [p["id"] for p in records[0]["programs"]]
    assert response.headers["X-Has-Next"] == "true"


def test_cycle_cursor_is_bound_to_limit_and_endpoint(api_get, factory, tenant):
    factory.cycle(tenant.institution, name="Second")
    first = api_get(tenant, CYCLES, {"limit": 1}).get_json()
    changed = api_get(tenant, CYCLES, {"limit": 2, "cursor": first["cursor"]})
    assert changed.get_json()["error"] == "cursor does not match this query"
    on_applications = api_get(tenant, "/api/v1/applications", {"limit": 1, "cursor": first["cursor"]})
    assert on_applications.get_json()["error"] == "cursor does not match this query"


def test_cycle_parameter_errors(api_get, tenant):
    assert api_get(tenant, CYCLES, {"limit": "0"}).get_json()["errors"][0]["name"] == "limit"
    assert api_get(tenant, CYCLES, {"format": "xls"}).get_json()["error"] == "format must be json or csv"
    assert api_get(tenant, CYCLES, {"cursor": "nope"}).get_json()["error"] == "invalid cursor"
