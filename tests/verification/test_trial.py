"""The public trial key: demo records for every registry and level, never billed, nothing else reachable."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from core.db import db
from core.models import VerificationCharge
from core.verification.demo import DEMO_RECORDS
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms
from tests.verification.conftest import post_json

TRIAL = auth_header("sk_trial_demo")
ISSUERS = {
    "NESA": {"code": "NESA", "name": "National Examination and School Inspection Authority", "country": "Rwanda"},
    "UNEB": {"code": "UNEB", "name": "Uganda National Examinations Board", "country": "Uganda"},
    "KNEC": {"code": "KNEC", "name": "Kenya National Examinations Council", "country": "Kenya"},
}
LEVEL_FIELDS = {
    ("NESA", "P-Level"): set(), ("NESA", "O-Level"): {"division"}, ("NESA", "A-Level"): {"combination", "aggregate"},
    ("UNEB", "PLE"): {"division"}, ("UNEB", "UCE"): {"division"}, ("UNEB", "UACE"): {"points"},
    ("KNEC", "KCPE"): {"total_marks"}, ("KNEC", "KCSE"): {"mean_grade", "total_points"},
}
BASE_FIELDS = {"id", "candidate", "level", "year", "school", "subjects"}


def ledger_rows(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(VerificationCharge))


@pytest.mark.parametrize("record", DEMO_RECORDS, ids=lambda r: f"{r.registry}-{r.level}-{r.reference}")
def test_every_demo_record_answers_with_the_full_shape(client, app, record):
    response = post_json(client, "/api/v1/verifications", record.request, TRIAL)
    assert response.status_code == 200, response.json
    assert_conforms(response)
    body = response.json
    assert body["code"] == 200
    assert body["result"] == record.result
    assert body["issuer"] == ISSUERS[record.registry]
    assert body["billing"] == {"charged": False, "amount": 0, "currency": "USD"}
    result = body["record"]
    assert result["id"] == record.reference
    assert result["candidate"] == {"full_name": record.full_name, "gender": record.gender,
                                   "date_of_birth": record.date_of_birth}
    assert (result["level"], result["year"], result["school"]) == (record.level, record.year, record.school)
    if record.result == "authentic":
        assert set(result) == BASE_FIELDS | LEVEL_FIELDS[(record.registry, record.level)]
        assert result["subjects"] == [{"subject": name, "grade": grade} for name, grade in record.subjects]
        assert len(result["subjects"]) >= 4
    else:
        assert set(result) == BASE_FIELDS
        assert result["subjects"] == []
    assert ledger_rows(app) == 0


def test_nesa_a_level_demo_values(client):
    body = {"issuer": "NESA", "national_id": "1200370015963021", "exam_number": "0101010452", "level": "A-Level"}
    record = post_json(client, "/api/v1/verifications", body, TRIAL).json["record"]
    assert record["candidate"]["full_name"] == "Diane Umutoni"
    assert record["school"] == "Lycée de Kigali"
    assert (record["combination"], record["aggregate"]) == ("PCM", "19/20")
    assert record["subjects"][0] == {"subject": "Physics", "grade": "A"}


@pytest.mark.parametrize("body, registry_name", [
    ({"issuer": "NESA", "national_id": "1200370015963022", "exam_number": "0101010452", "level": "A-Level"},
     "National Examination and School Inspection Authority"),
    ({"issuer": "UNEB", "index_number": "U0035/512", "year": "2020", "level": "UCE"},
     "Uganda National Examinations Board"),
    ({"issuer": "KNEC", "index_number": "20403001045", "year": "2022", "examination": "KCPE"},
     "Kenya National Examinations Council"),
])
def test_identifiers_not_matching_a_demo_record_give_404(client, app, body, registry_name):
    response = post_json(client, "/api/v1/verifications", body, TRIAL)
    assert response.status_code == 404
    assert_conforms(response)
    assert response.json == {
        "code": 404, "error": "Record not found", "errors": [], "message": f"{registry_name} has no matching record",
        "issuer": ISSUERS[body["issuer"]], "billing": {"charged": False, "amount": 0, "currency": "USD"},
    }
    assert ledger_rows(app) == 0


def test_simulated_live_records_are_not_demo_records(client):
    from devtools.simulated_records import SIMULATED_RECORDS
    response = post_json(client, "/api/v1/verifications", SIMULATED_RECORDS[0].request, TRIAL)
    assert response.status_code == 404


def test_issuers_with_the_trial_key_list_demo_requests(client):
    response = client.get("/api/v1/verifications/issuers", headers=TRIAL)
    assert response.status_code == 200
    assert_conforms(response)
    data = response.json["data"]
    assert [issuer["code"] for issuer in data] == ["NESA", "UNEB", "KNEC"]
    for issuer in data:
        demo_bodies = [record.request for record in DEMO_RECORDS if record.registry == issuer["code"]]
        assert issuer["demo_requests"] == demo_bodies
    nesa_fields = {field["name"]: field for field in data[0]["fields"]}
    assert nesa_fields["national_id"]["pattern"] == "^[0-9]{16}$"
    assert nesa_fields["level"]["enum"] == ["P-Level", "O-Level", "A-Level"]
    assert all(field["required"] for field in nesa_fields.values())


def test_every_demo_request_listed_by_the_issuers_endpoint_matches(client):
    for issuer in client.get("/api/v1/verifications/issuers", headers=TRIAL).json["data"]:
        for body in issuer["demo_requests"]:
            assert post_json(client, "/api/v1/verifications", body, TRIAL).status_code == 200


def test_trial_key_is_rejected_on_every_other_api_endpoint(app, client):
    """Every `/api/v1` route except the two verification endpoints and the public document and its reference
    page refuses it."""
    allowed = {"/api/v1/verifications", "/api/v1/verifications/issuers", "/api/v1/openapi.json", "/api/v1/docs"}
    checked = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1") or rule.rule in allowed:
            continue
        path = rule.rule.replace("<", "").replace(">", "")
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            response = client.open(path, method=method, headers=TRIAL)
            assert response.status_code == 401, (method, path)
            assert response.json["error"].startswith(
                "The trial API key only grants access to record verification"), (method, path)
            checked.append((method, path))
    assert ("GET", "/api/v1/institution") in checked


def test_missing_key_gives_401(client):
    response = post_json(client, "/api/v1/verifications", {"issuer": "NESA"})
    assert response.status_code == 401
    assert_conforms(response)
