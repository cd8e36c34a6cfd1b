"""The OpenAPI document's request schemas are exactly those derived from the registry definitions."""
from __future__ import annotations

from api.openapi import openapi_document
from tests.verification.request_schemas import request_schemas


def test_request_schemas_match_the_registry_definitions():
    schemas = openapi_document()["components"]["schemas"]
    for name, schema in request_schemas().items():
        assert schemas[name] == schema, f"api/openapi/verifications.yaml: {name} differs from the definitions"


def test_both_endpoints_are_documented(client):
    paths = client.get("/api/v1/openapi.json").json["paths"]
    assert set(paths["/api/v1/verifications"]) == {"post"}
    assert set(paths["/api/v1/verifications/issuers"]) == {"get"}
    post = paths["/api/v1/verifications"]["post"]
    assert {"200", "400", "401", "404", "409", "422", "503"} <= set(post["responses"])
    assert post["parameters"][0] == {"$ref": "#/components/parameters/IdempotencyKey"}
