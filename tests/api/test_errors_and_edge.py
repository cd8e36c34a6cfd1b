import json
import uuid

import pytest

import api
from core.errors import KaribuError
from tests.conftest import app_config, auth_header
from tests.openapi_check import assert_conforms
from wsgi import create_app


def test_every_response_carries_a_request_id(client):
    response = client.get("/api/v1/openapi.json")
    assert len(response.headers["X-Request-Id"]) >= 8
    response = client.get("/api/v1/openapi.json", headers={"X-Request-Id": "trace-1234-abcd"})
    assert response.headers["X-Request-Id"] == "trace-1234-abcd"
    response = client.get("/api/v1/openapi.json", headers={"X-Request-Id": "bad id with spaces"})
    assert response.headers["X-Request-Id"] != "bad id with spaces"
    assert client.get("/no-such-page").headers["X-Request-Id"]


def test_unknown_api_path_and_wrong_method_are_json(client, factory):
    _, raw_key = factory.api_key(factory.institution())
    response = client.get("/api/v1/no-such-thing", headers=auth_header(raw_key))
    assert response.status_code == 404 and response.json == {"code": 404, "error": "Not found", "errors": []}
    response = client.post("/api/v1/institution", headers=auth_header(raw_key))
    assert response.status_code == 405
    assert response.json == {"code": 405, "error": "Method POST not allowed on /api/v1/institution", "errors": []}
    assert "GET" in response.headers["Allow"]


def test_portal_errors_are_html(client):
    response = client.get("/no-such-page")
    assert response.status_code == 404 and response.mimetype == "text/html"


def test_unexpected_error_is_generic_500_with_details_only_in_the_log(client, monkeypatch, caplog):
    secret_detail = "database password is hunter2"

    def explode(*_):
        raise RuntimeError(secret_detail)

    monkeypatch.setattr(api, "openapi_json_bytes", explode)
    response = client.get("/api/v1/openapi.json", headers={"X-Request-Id": "req-500-check"})
    assert response.status_code == 500
    assert response.json == {"code": 500, "error": "Internal server error"}
    assert secret_detail not in response.get_data(as_text=True)
    logged = [record for record in caplog.records if record.levelname == "ERROR"]
    assert any(record.request_id == "req-500-check" and record.exc_info and
               secret_detail in str(record.exc_info[1]) for record in logged)


def test_domain_error_extra_fields_are_rendered(client, monkeypatch):
    def refuse(*_):
        raise KaribuError("Registry unavailable")

    monkeypatch.setattr(api, "openapi_json_bytes", refuse)
    assert client.get("/api/v1/openapi.json").json == {"code": 500, "error": "Registry unavailable"}


def test_edge_gate(app, client, factory, monkeypatch):
    _, raw_key = factory.api_key(factory.institution())
    assert client.get("/api/v1/institution", headers=auth_header(raw_key)).status_code == 200  # gate off

    monkeypatch.setitem(app.config, "EDGE_SHARED_SECRET", "edge-secret-value")
    for headers in ({}, {"X-Edge-Auth": "wrong"}, {"X-Edge-Auth": "edge-secret-valu"}):
        response = client.get("/api/v1/institution", headers={**auth_header(raw_key), **headers})
        assert response.status_code == 403
        assert response.json == {"code": 403, "errors": [],
                                 "error": "Forbidden: request did not come through the official endpoint"}
        assert_conforms(response)
    # Unknown paths are gated too, before anything else is revealed.
    assert client.get("/api/v1/no-such-thing").status_code == 403
    response = client.get("/api/v1/institution",
                          headers={**auth_header(raw_key), "X-Edge-Auth": "edge-secret-value"})
    assert response.status_code == 200


def test_rate_limit_is_shared_between_app_instances(database_url, tmp_path, factory, redis_client):
    """Two app objects (think: two gunicorn machines) share one Redis counter per key."""
    _, raw_key = factory.api_key(factory.institution())
    config = app_config(database_url, tmp_path)
    config.update(API_RATE_LIMIT="3/minute", RATELIMIT_KEY_PREFIX=f"shared-{uuid.uuid4().hex[:8]}")
    first, second = create_app(config).test_client(), create_app(config).test_client()
    statuses = [client.get("/api/v1/institution", headers=auth_header(raw_key)).status_code
                for client in (first, second, first)]
    assert statuses == [200, 200, 200]
    response = second.get("/api/v1/institution", headers=auth_header(raw_key))
    assert response.status_code == 429
    assert response.json["code"] == 429 and "Retry-After" in response.json["error"]
    assert 0 < int(response.headers["Retry-After"]) <= 60
    assert_conforms(response)
    # Another key has its own budget.
    _, other_key = factory.api_key(factory.institution())
    assert first.get("/api/v1/institution", headers=auth_header(other_key)).status_code == 200
    # Public views are limited by address.
    assert [first.get("/api/v1/openapi.json").status_code for _ in range(4)] == [200, 200, 200, 429]


def test_readyz_reports_database_and_redis(client, app, monkeypatch):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json["checks"] == {"database": "ok", "redis": "ok", "migrations": "ok"}
    monkeypatch.setitem(app.extensions, "karibu_readiness_redis",
                        __import__("redis").Redis(port=1, socket_timeout=0.2))
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json["checks"]["redis"] == "unreachable"


def test_healthz_answers_without_touching_dependencies(client, app, monkeypatch):
    monkeypatch.setitem(app.extensions, "karibu_redis", __import__("redis").Redis(port=1, socket_timeout=0.2))
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json["status"] == "ok"
    assert isinstance(response.json["redis_faults"], dict)


def test_openapi_document_is_valid(client):
    from openapi_spec_validator import validate
    document = client.get("/api/v1/openapi.json").json
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert json.dumps(document)


def test_api_responses_are_not_cacheable_and_carry_rate_limit_headers(client, factory):
    _, raw_key = factory.api_key(factory.institution())
    response = client.get("/api/v1/institution", headers=auth_header(raw_key))
    assert response.headers["Cache-Control"] == "no-store"
    assert int(response.headers["X-RateLimit-Limit"]) == 100000
    assert int(response.headers["X-RateLimit-Remaining"]) < 100000
    assert "Retry-After" not in response.headers, "Retry-After belongs to 429 only"


def test_json_keys_keep_the_documented_order(client, factory):
    _, raw_key = factory.api_key(factory.institution())
    body = client.get("/api/v1/institution", headers=auth_header(raw_key)).get_data(as_text=True)
    assert body.index('"code"') < body.index('"institution"') < body.index('"credential"')


@pytest.mark.parametrize("body, refused", [
    ('{"updates": [{"id": "app_\\u0000x", "stage": "interview"}]}', True),
    ('{"updates": [{"id": "app_x", "stage": "a\\\\\\u0000"}]}', True),   # an escaped backslash, then NUL
    ('{"updates": [{"id": "app_x", "stage": "a\\\\u0000"}]}', False),    # backslash + the text "u0000"
])
def test_nul_characters_in_json_bodies_are_a_clear_400(client, factory, body, refused):
    _, raw_key = factory.api_key(factory.institution())
    response = client.patch("/api/v1/applications/update", data=body, content_type="application/json",
                            headers=auth_header(raw_key))
    assert response.status_code == 400
    is_nul_error = response.json["error"].startswith("Strings in the request body must not contain")
    assert is_nul_error is refused


def test_database_errors_with_non_numeric_codes_still_give_a_generic_500(client, monkeypatch):
    from sqlalchemy.exc import DataError

    def fail(*_):
        raise DataError("SELECT 1", {}, Exception("invalid byte sequence"))

    monkeypatch.setattr(api, "openapi_json_bytes", fail)
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 500 and response.json == {"code": 500, "error": "Internal server error"}
