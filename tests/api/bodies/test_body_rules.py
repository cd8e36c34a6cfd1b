"""The request-body rules of every JSON endpoint (docs/api.md, "Request bodies"), one regression each,
through HTTP on all five entrances: a clear 400 (or 413), never a 500, and nothing written."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from api.bodies import MAX_DEPTH
from core.db import db
from core.models import Event, Payment
from tests.conftest import auth_header

ENTRANCES = ["update", "verify-trial", "verify-live", "flutterwave", "mpesa"]


def nested(depth: int) -> bytes:
    """A JSON object whose innermost value sits `depth` levels of objects and arrays deep."""
    return ('{"a":' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}").encode()


def assert_refused(response, status: int, error: str) -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert body["code"] == status
    assert body["error"].startswith(error), body["error"]


def nothing_written(app) -> bool:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Event)) == 0 and \
            db.session.scalar(select(func.count()).select_from(Payment)) == 0


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_nesting_of_depth_1000_in_2kb_is_a_400(app, client, json_endpoints, entrance, chunked):
    raw = nested(1000)
    assert len(raw) < 2100
    response = json_endpoints[entrance].send(client, raw, chunked=chunked)
    assert_refused(response, 400, "Request body is nested too deeply: at most 32 levels")
    assert nothing_written(app)


@pytest.mark.parametrize("entrance", ENTRANCES)
def test_the_depth_limit_is_exact(client, json_endpoints, entrance):
    endpoint = json_endpoints[entrance]
    assert_refused(endpoint.send(client, nested(MAX_DEPTH + 1)), 400, "Request body is nested too deeply")
    at_limit = endpoint.send(client, nested(MAX_DEPTH))
    assert at_limit.status_code in (200, 400)
    assert not at_limit.get_json().get("error", "").startswith("Request body is nested"), "32 levels are allowed"


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("raw", [
    b'{"updates": [{"id": "app_\\u0000x", "stage": "interview"}]}',
    b'{"a\\u0000": 1}',
    b'{"data": {"tx_ref": ["x", "\\u0000"]}}',
], ids=["value", "key", "in-a-list"])
def test_nul_characters_are_a_400_with_or_without_content_length(app, client, json_endpoints, entrance,
                                                                    chunked, raw):
    response = json_endpoints[entrance].send(client, raw, chunked=chunked)
    assert_refused(response, 400, "Strings in the request body must not contain the NUL character")
    assert nothing_written(app)


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("raw", [b'{"id": "\\ud800"}', b'{"\\udfff": 1}', b'{"x": ["\\ud83d"]}'],
                         ids=["lone-high", "lone-low-key", "in-a-list"])
def test_unpaired_surrogates_are_a_400(client, json_endpoints, entrance, raw):
    response = json_endpoints[entrance].send(client, raw)
    assert_refused(response, 400, "Strings in the request body must not contain unpaired surrogates")


def test_a_surrogate_pair_is_an_ordinary_character(client, json_endpoints):
    response = json_endpoints["update"].send(client, b'{"updates": [{"id": "app_\\ud83d\\ude00", "stage": "x"}]}')
    assert response.status_code == 400
    assert response.get_json()["errors"][0]["message"] == "no application with this id"


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("raw", [b'{"a": "\xff"}', b'{"a": "\xc3"}', b'{"a": "\xed\xa0\x80"}'],
                         ids=["invalid-byte", "truncated-sequence", "encoded-surrogate"])
def test_invalid_utf8_is_a_400(client, json_endpoints, entrance, raw):
    assert_refused(json_endpoints[entrance].send(client, raw), 400, "Request body is not valid UTF-8")


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("raw", [b"[]", b"[1, 2]", b'"text"', b"42", b"null", b"true"])
def test_roots_other_than_an_object_are_a_400(client, json_endpoints, entrance, raw):
    assert_refused(json_endpoints[entrance].send(client, raw), 400, "Request body must be a JSON object")


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("number", ["1e999999", "-1e400", "1e16", "9007199254740992", "9" * 5000, "-" + "9" * 30])
def test_numbers_outside_the_exact_json_range_are_a_400(client, json_endpoints, entrance, number):
    raw = f'{{"data": {{"amount": {number}}}, "x": 1}}'.encode()
    assert_refused(json_endpoints[entrance].send(client, raw), 400,
                   "Numbers in the request body must be between -9007199254740991 and 9007199254740991")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_standard_constants_are_not_json(client, json_endpoints, constant):
    response = json_endpoints["flutterwave"].send(client, f'{{"amount": {constant}}}'.encode())
    assert_refused(response, 400, f"Request body is not valid JSON: {constant} is not a JSON value")


def test_numbers_inside_the_range_are_read(client, json_endpoints):
    raw = b'{"updates": [{"id": "app_x", "enrolled": 9007199254740991}]}'
    response = json_endpoints["update"].send(client, raw)
    assert response.status_code == 400
    assert response.get_json()["error"] == "1 of 1 updates are invalid; nothing was changed"


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("raw", [b"", b"  \n", b"{", b'{"a": 1} {"b": 2}', b"{'a': 1}", b'\xef\xbb\xbf{"a": 1}'])
def test_empty_and_malformed_bodies_are_a_400(client, json_endpoints, entrance, raw):
    response = json_endpoints[entrance].send(client, raw)
    expected = "Request body is empty" if not raw.strip() else "Request body is not valid JSON: "
    assert_refused(response, 400, expected)


@pytest.mark.parametrize("entrance", ENTRANCES)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_over_the_cap_is_413_chunked_or_not(app, client, json_endpoints, monkeypatch, entrance, chunked):
    monkeypatch.setitem(app.config, "MAX_CONTENT_LENGTH", 2048)
    endpoint = json_endpoints[entrance]
    for size, status in ((2049, 413), (4000, 413), (2048, None)):
        raw = json.dumps({"padding": "x" * (size - 15)}).encode()
        assert len(raw) == size
        response = endpoint.send(client, raw, chunked=chunked)
        if status is None:
            assert response.status_code in (200, 400), "a body of exactly the cap is read"
            continue
        assert response.status_code == 413
        body = response.get_json()
        assert (body["code"], body["error"], body["max_bytes"]) == (
            413, "Request body too large: at most 2048 bytes", 2048)


@pytest.mark.parametrize("entrance", ["update", "verify-trial", "verify-live"])
def test_the_api_asks_for_a_json_content_type(client, json_endpoints, entrance):
    response = json_endpoints[entrance].send(client, b'{"a": 1}', content_type="text/plain")
    assert_refused(response, 400, "Request body must be JSON: send 'Content-Type: application/json'")


@pytest.mark.parametrize("entrance", ["flutterwave", "mpesa"])
def test_callbacks_read_json_whatever_content_type_the_processor_sent(client, json_endpoints, entrance):
    response = json_endpoints[entrance].send(client, b'{"event": "transfer.completed"}', content_type="text/plain")
    assert response.status_code in (200, 400)
    assert not response.get_json()["error" if response.status_code == 400 else "result"].startswith("Request body")


@pytest.mark.parametrize("limit", ["1e999", "9" * 400, "9" * 5000, "-1", "0", "1001", "1.5", "NaN"])
def test_absurd_limit_values_are_a_400(client, factory, limit):
    _, raw_key = factory.api_key(factory.institution())
    response = client.get("/api/v1/applications", query_string={"limit": limit}, headers=auth_header(raw_key))
    assert response.status_code == 400
    assert response.get_json()["error"] == "limit must be an integer between 1 and 1000"


def test_brackets_inside_strings_do_not_count_as_nesting(client, json_endpoints):
    tricky = "[{" * 40 + '\\"[{\\\\' + "]}" * 3
    raw = ('{"updates": [{"id": "' + tricky + '", "stage": "' + tricky + '"}]}').encode()
    response = json_endpoints["update"].send(client, raw)
    assert response.status_code == 400
    assert response.get_json()["error"] == "1 of 1 updates are invalid; nothing was changed"
