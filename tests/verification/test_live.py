"""Live keys against the registry simulator: every registry and level, billing and the ledger."""
from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import select

from core.db import db
from core.models import VerificationCharge
from core.verification.exam_records import RESULT_AUTHENTIC
from devtools.simulated_records import SIMULATED_RECORDS
from tests.conftest import auth_header
from tests.api.test_auth import oidc  # noqa: F401  (fixture)
from tests.openapi_check import assert_conforms
from tests.verification.conftest import post_json

ONE_PER_LEVEL = [
    next(record for record in SIMULATED_RECORDS
         if (record.registry, record.level, record.result) == (registry, level, RESULT_AUTHENTIC))
    for registry, level in [("NESA", "P-Level"), ("NESA", "O-Level"), ("NESA", "A-Level"), ("UNEB", "PLE"),
                            ("UNEB", "UCE"), ("UNEB", "UACE"), ("KNEC", "KCPE"), ("KNEC", "KCSE")]
]
NOT_AUTHENTIC = [record for record in SIMULATED_RECORDS if record.result != RESULT_AUTHENTIC][:4]


def charges(app) -> list[VerificationCharge]:
    with app.app_context():
        rows = list(db.session.scalars(select(VerificationCharge).order_by(VerificationCharge.created_at)))
        db.session.expunge_all()
        return rows


@pytest.mark.parametrize("record", ONE_PER_LEVEL, ids=lambda r: f"{r.registry}-{r.level}")
def test_live_lookup_returns_the_registry_record_and_bills_it(app, client, live_registries, billed_institution,
                                                               record):
    institution, raw_key = billed_institution
    response = post_json(client, "/api/v1/verifications", record.request, auth_header(raw_key))
    assert response.status_code == 200, response.json
    assert_conforms(response)
    body = response.json
    assert body["result"] == "authentic"
    assert body["issuer"]["code"] == record.registry
    assert body["record"] == record.response_record()
    assert body["billing"] == {"charged": True, "amount": 2.75, "currency": "EUR"}
    [charge] = charges(app)
    assert (charge.institution_id, charge.issuer, charge.level, charge.outcome) == (
        institution.id, record.registry, record.level, "authentic")
    assert (charge.amount, charge.currency) == (Decimal("2.75"), "EUR")
    assert charge.api_key_id is not None and charge.actor.startswith("sk_live_")
    assert len(charge.identifiers_hash) == 64
    for value in dict(record.identifiers).values():
        assert value not in charge.identifiers_hash


@pytest.mark.parametrize("record", NOT_AUTHENTIC, ids=lambda r: f"{r.registry}-{r.level}-{r.result}")
def test_withheld_and_cancelled_results_are_answered_without_grades_and_billed(app, client, live_registries,
                                                                               billed_institution, record):
    _, raw_key = billed_institution
    response = post_json(client, "/api/v1/verifications", record.request, auth_header(raw_key))
    assert response.status_code == 200
    assert_conforms(response)
    assert response.json["result"] == record.result
    assert response.json["record"]["subjects"] == []
    assert [charge.outcome for charge in charges(app)] == [record.result]


@pytest.mark.parametrize("body", [
    {"issuer": "NESA", "national_id": "1200580000000000", "exam_number": "0105120233", "level": "O-Level"},
    {"issuer": "UNEB", "index_number": "U0001/001", "year": "2019", "level": "UCE"},
    {"issuer": "KNEC", "index_number": "00000000001", "year": "2022", "examination": "KCSE"},
], ids=["NESA", "UNEB", "KNEC"])
def test_not_found_is_404_and_still_billed(app, client, live_registries, billed_institution, body):
    _, raw_key = billed_institution
    response = post_json(client, "/api/v1/verifications", body, auth_header(raw_key))
    assert response.status_code == 404
    assert_conforms(response)
    assert response.json["error"] == "Record not found"
    assert response.json["message"].endswith("has no matching record")
    assert response.json["issuer"]["code"] == body["issuer"]
    assert response.json["billing"] == {"charged": True, "amount": 2.75, "currency": "EUR"}
    assert [charge.outcome for charge in charges(app)] == ["not_found"]


def test_demo_records_are_not_answered_for_live_keys(client, live_registries, billed_institution):
    _, raw_key = billed_institution
    body = {"issuer": "NESA", "national_id": "1200370015963021", "exam_number": "0101010452", "level": "A-Level"}
    assert post_json(client, "/api/v1/verifications", body, auth_header(raw_key)).status_code == 404


def test_default_price_applies_without_an_agreement(app, client, factory, live_registries):
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    response = post_json(client, "/api/v1/verifications", ONE_PER_LEVEL[0].request, auth_header(raw_key))
    assert response.json["billing"] == {"charged": True, "amount": 1.5, "currency": "USD"}
    [charge] = charges(app)
    assert (charge.amount, charge.currency, charge.institution_id) == (Decimal("1.50"), "USD", institution.id)


def test_identifier_hash_is_keyed_and_stable(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    for _ in range(2):
        post_json(client, "/api/v1/verifications", ONE_PER_LEVEL[1].request, auth_header(raw_key))
    post_json(client, "/api/v1/verifications", ONE_PER_LEVEL[2].request, auth_header(raw_key))
    first, second, third = (charge.identifiers_hash for charge in charges(app))
    assert first == second != third


def test_issuers_for_a_live_key_have_no_demo_requests(client, billed_institution):
    _, raw_key = billed_institution
    response = client.get("/api/v1/verifications/issuers", headers=auth_header(raw_key))
    assert response.status_code == 200
    assert_conforms(response)
    assert all("demo_requests" not in issuer for issuer in response.json["data"])


def test_oidc_principals_are_billed_to_their_institution(app, client, live_registries, billed_institution, oidc):
    institution, _ = billed_institution
    token = oidc.token(institution_id=institution.id)
    response = post_json(client, "/api/v1/verifications", ONE_PER_LEVEL[7].request, auth_header(token))
    assert response.status_code == 200
    assert response.json["billing"] == {"charged": True, "amount": 2.75, "currency": "EUR"}
    [charge] = charges(app)
    assert (charge.institution_id, charge.api_key_id, charge.actor) == (institution.id, None, "oidc:sis-sync")
