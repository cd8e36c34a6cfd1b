"""The served OpenAPI document: servers, tags, security schemes, the webhooks section and the shared error."""
from __future__ import annotations

import re

import pytest

from core.events.feed import EVENT_TYPES
from tests.openapi_check import assert_is_event, assert_matches_component, event_schema_name

OPERATION_METHODS = ("get", "put", "post", "patch", "delete")


@pytest.fixture
def document(client):
    return client.get("/api/v1/openapi.json").get_json()


def _operations(document):
    for path, item in document["paths"].items():
        for method in OPERATION_METHODS:
            if method in item:
                yield f"{method.upper()} {path}", item[method]


def test_servers_come_from_public_base_url(app, client, monkeypatch):
    assert client.get("/api/v1/openapi.json").get_json()["servers"][0]["url"] == "http://127.0.0.1:8000"
    monkeypatch.setitem(app.config, "PUBLIC_BASE_URL", "https://api.karibu.example/")
    assert client.get("/api/v1/openapi.json").get_json()["servers"][0]["url"] == "https://api.karibu.example"


def test_every_operation_has_a_declared_tag(document):
    declared = {tag["name"] for tag in document["tags"]}
    operations = dict(_operations(document))
    assert "GET /api/v1/events" in operations and "GET /api/v1/events/{event_id}" in operations
    for name, operation in operations.items():
        assert operation.get("tags"), f"{name} has no tag"
        assert set(operation["tags"]) <= declared, name


def test_security_schemes_for_the_key_and_the_identity_provider_token(document):
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert schemes["identityProviderToken"] == {**schemes["identityProviderToken"], "type": "http",
                                                "scheme": "bearer", "bearerFormat": "JWT"}
    assert document["security"] == [{"bearerAuth": []}, {"identityProviderToken": []}]


def test_a_webhook_with_schema_and_example_per_event_type(document):
    assert set(document["webhooks"]) == set(EVENT_TYPES)
    for event_type, webhook in document["webhooks"].items():
        body = webhook["post"]["requestBody"]["content"]["application/json"]
        assert body["schema"]["$ref"].endswith(event_schema_name(event_type))
        assert body["example"]["type"] == event_type
        assert_is_event(body["example"])
        signature = [p for p in webhook["post"]["parameters"] if p["name"] == "X-Karibu-Signature"]
        assert signature and signature[0]["in"] == "header"


def test_an_event_of_one_type_does_not_pass_for_another(document):
    example = document["webhooks"]["decision.sent"]["post"]["requestBody"]["content"]["application/json"]
    with pytest.raises(AssertionError):
        assert_matches_component({**example["example"], "type": "payment.completed"}, "EventPaymentCompleted")


def test_every_4xx_response_of_the_document_uses_the_shared_error(document):
    for name, operation in _operations(document):
        for status, response in operation["responses"].items():
            if not status.startswith("4"):
                continue
            if "$ref" in response:
                response = document["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
            schema = response["content"]["application/json"]["schema"]
            refs = [schema.get("$ref")] + [option.get("$ref") for option in schema.get("anyOf", [])]
            assert "#/components/schemas/Error" in refs or "#/components/schemas/VerificationNotFound" in refs, \
                f"{name} {status}"


@pytest.mark.parametrize("body, valid", [
    ({"code": 400, "error": "x", "errors": [{"location": "query", "name": "limit", "message": "m"}]}, True),
    ({"code": 401, "error": "x", "errors": []}, True),
    ({"code": 400, "error": "x", "parameter": "limit"}, False),
    ({"code": 400, "error": "x", "errors": [{"location": "form", "name": "a", "message": "m"}]}, False),
    ({"code": 400, "error": "x", "errors": [{"field": "a", "message": "m"}]}, False),
])
def test_the_error_component_accepts_only_the_one_shape(body, valid):
    if valid:
        assert_matches_component(body, "Error")
    else:
        with pytest.raises(AssertionError):
            assert_matches_component(body, "Error")


def test_every_api_route_is_an_operation_of_the_document(app, document):
    """Unknown query parameters are refused per operation of the document: no route may be missing from it."""
    undocumented = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1/") or rule.endpoint in ("api.openapi_json", "api.reference_page"):
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            if method.lower() not in document["paths"].get(path, {}):
                undocumented.add(f"{method} {path}")
    assert undocumented == set()
