"""Registry failures: timeout, 5xx, garbage, redirect, refused connection, wrong credentials: 503, unbilled."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from core.db import db
from core.models import VerificationCharge
from devtools.simulated_records import SIMULATED_RECORDS
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms
from tests.verification.conftest import post_json

FIRST_RECORD = {code: next(r for r in SIMULATED_RECORDS if r.registry == code) for code in ("NESA", "UNEB", "KNEC")}


def ledger_size(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(VerificationCharge))


def assert_unavailable(response, code: str) -> None:
    assert response.status_code == 503, response.json
    assert_conforms(response)
    assert response.json["error"] == "Registry unavailable"
    assert response.json["issuer"]["code"] == code
    assert response.json["billing"] == {"charged": False, "amount": 0, "currency": "EUR"}


@pytest.mark.parametrize("code", ["NESA", "UNEB", "KNEC"])
@pytest.mark.parametrize("mode, settings", [
    ("slow", {"delay": 1.5}), ("error", {"status": 500}), ("error", {"status": 502}),
    ("garbage", {}), ("redirect", {}),
], ids=["timeout", "500", "502", "garbage", "redirect"])
def test_registry_failures_give_503_and_are_not_billed(app, client, live_registries, billed_institution, code,
                                                       mode, settings):
    _, raw_key = billed_institution
    live_registries.behave(mode, registry=code, **settings)
    response = post_json(client, "/api/v1/verifications", FIRST_RECORD[code].request, auth_header(raw_key))
    assert_unavailable(response, code)
    assert ledger_size(app) == 0
    live_registries.behave("normal")
    response = post_json(client, "/api/v1/verifications", FIRST_RECORD[code].request, auth_header(raw_key))
    assert response.status_code == 200
    assert ledger_size(app) == 1


def test_other_registries_keep_working_while_one_fails(client, live_registries, billed_institution):
    _, raw_key = billed_institution
    live_registries.behave("error", registry="UNEB")
    assert post_json(client, "/api/v1/verifications", FIRST_RECORD["UNEB"].request,
                     auth_header(raw_key)).status_code == 503
    assert post_json(client, "/api/v1/verifications", FIRST_RECORD["KNEC"].request,
                     auth_header(raw_key)).status_code == 200


def test_refused_connection_gives_503(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    app.config["REGISTRY_KNEC_URL"] = "http://127.0.0.1:9/knec"
    response = post_json(client, "/api/v1/verifications", FIRST_RECORD["KNEC"].request, auth_header(raw_key))
    assert_unavailable(response, "KNEC")
    assert ledger_size(app) == 0


def test_rejected_credentials_give_503(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    app.config["REGISTRY_NESA_TOKEN"] = "not-the-token"
    response = post_json(client, "/api/v1/verifications", FIRST_RECORD["NESA"].request, auth_header(raw_key))
    assert_unavailable(response, "NESA")
    assert ledger_size(app) == 0


def test_trial_key_never_reaches_the_registry(client, live_registries):
    live_registries.behave("error")
    body = {"issuer": "KNEC", "index_number": "20403001045", "year": "2022", "examination": "KCSE"}
    response = post_json(client, "/api/v1/verifications", body, auth_header("sk_trial_demo"))
    assert response.status_code == 200
