"""Bad requests through HTTP: content type, JSON, validation problems, Idempotency-Key format."""
from __future__ import annotations

import pytest

from tests.conftest import auth_header
from tests.openapi_check import assert_conforms
from tests.verification.conftest import post_json, post_raw

TRIAL = auth_header("sk_trial_demo")


@pytest.mark.parametrize("data, content_type", [
    ("issuer=NESA", "application/x-www-form-urlencoded"),
    ('{"issuer": "NESA"}', "text/plain"),
    ("", None),
])
def test_non_json_bodies_are_400(client, data, content_type):
    response = post_raw(client, "/api/v1/verifications", data, TRIAL, content_type)
    assert response.status_code == 400
    assert_conforms(response)
    assert response.json["code"] == 400
    assert response.json["error"] == "Request body must be JSON: send 'Content-Type: application/json'"
    assert response.json["errors"] == [{"location": "header", "name": "Content-Type",
                                        "message": response.json["error"]}]


def test_malformed_json_is_400(client):
    response = post_raw(client, "/api/v1/verifications", '{"issuer": "NESA",', TRIAL, "application/json")
    assert response.status_code == 400
    assert_conforms(response)
    assert response.json["error"].startswith("Request body is not valid JSON: Expecting property name")


def test_validation_problems_are_listed_in_the_error_body(client):
    response = post_json(client, "/api/v1/verifications", {
        "issuer": "KNEC", "index_number": "123", "examination": "KCSE", "first_name": "Brian"}, TRIAL)
    assert response.status_code == 400
    assert_conforms(response)
    assert response.json == {"code": 400, "error": "Invalid verification request", "errors": [
        {"location": "body", "name": "index_number", "message": "must be exactly 11 digits"},
        {"location": "body", "name": "year", "message": "is required for KNEC"},
        {"location": "body", "name": "first_name",
         "message": "candidate names are never sent; the registry returns them"},
    ]}


def test_unknown_issuer_is_400(client):
    response = post_json(client, "/api/v1/verifications", {"issuer": "WAEC", "index_number": "1"}, TRIAL)
    assert response.status_code == 400
    assert_conforms(response)
    assert response.json["errors"] == [{"location": "body", "name": "issuer",
                                        "message": "unknown issuer 'WAEC': expected one of NESA, UNEB, KNEC"}]


@pytest.mark.parametrize("key", ["", "with space", "x" * 256, "naïve"])
def test_malformed_idempotency_key_is_400(client, key):
    body = {"issuer": "UNEB", "index_number": "U0035/512", "year": "2019", "level": "UCE"}
    response = post_json(client, "/api/v1/verifications", body, {**TRIAL, "Idempotency-Key": key})
    assert response.status_code == 400
    assert_conforms(response)
    if key.isascii():  # a header that is not ASCII text is refused earlier, by the input guard, in the same shape
        assert response.json["reason"] == "idempotency_key_invalid"
    [problem] = response.json["errors"]
    assert (problem["location"], problem["name"]) == ("header", "Idempotency-Key")


def test_json_null_is_not_an_object(client):
    response = post_raw(client, "/api/v1/verifications", "null", TRIAL, "application/json")
    assert response.status_code == 400
    assert response.json["error"] == "Request body must be a JSON object"
