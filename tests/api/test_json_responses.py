"""JSON bodies written by orjson (api/json_provider.py) say exactly what Flask's encoder said, and a page whose naive
datetimes orjson writes says exactly what its records said with each one formatted by `isoformat_z`."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from flask import current_app, jsonify
from flask.json.provider import DefaultJSONProvider

from core.timefmt import isoformat_z
from tests.api.conftest import Tenant


@dataclass
class Money:
    amount: Decimal
    currency: str


def flask_body(app, value) -> bytes:
    with app.app_context():
        provider = DefaultJSONProvider(app)
        provider.sort_keys = False  # as the app has it: records keep their documented order
        return provider.response(value).get_data()


def karibu_body(app, value) -> bytes:
    with app.app_context():
        response = jsonify(value)
        assert response.mimetype == "application/json"
        return response.get_data()


@pytest.mark.parametrize("value", [
    {"z": 1, "a": {"y": [1, 2.5, None, True], "b": "Zoë 🎓 \"quoted\" \\ \n\t\x01"}},
    {"amount": Decimal("50000.00"), "when": datetime(2026, 11, 26, 3, 4, 5, tzinfo=timezone.utc),
     "id": uuid.UUID("12345678-1234-5678-1234-567812345678"), "money": Money(Decimal("1.50"), "RWF")},
    {1: "int key", None: "null key"},
    ["\ud800 lone surrogate"],  # orjson refuses it: Flask's encoder writes it as before
    {"big": 2 ** 70},
])
def test_bodies_mean_the_same_as_flask_s_encoder(app, value):
    ours, flask_s = karibu_body(app, value), flask_body(app, value)
    assert json.loads(ours) == json.loads(flask_s)
    assert json.dumps(json.loads(ours)) == json.dumps(json.loads(flask_s))  # the same key order
    assert ours.endswith(b"\n")


def test_record_order_and_non_ascii_text_reach_the_partner(api_get, factory, tenant: Tenant):
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle, first_name="Zoë",
                        last_name="Müller-Ngabo 🎓")
    response = api_get(tenant, "/api/v1/applications")
    assert response.status_code == 200
    assert "Müller-Ngabo 🎓".encode() in response.data  # UTF-8, not \\u escapes
    body = json.loads(response.data)
    assert list(body) == ["code", "has_next", "data"]
    record = body["data"][0]
    assert list(record) == ["id", "reference", "applicant_id", "personal", "application", "payment"]
    assert record["personal"]["last_name"] == "Müller-Ngabo 🎓"


def test_debug_output_stays_readable(app):
    app.debug = True
    try:
        assert karibu_body(app, {"a": 1}) == b'{\n  "a": 1\n}\n'
    finally:
        app.debug = False


def formatted(value):
    """`value` with each datetime written as the records write it."""
    if isinstance(value, datetime):
        return isoformat_z(value)
    if isinstance(value, dict):
        return {key: formatted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [formatted(item) for item in value]
    return value


def utc_body(app, value) -> bytes:
    with app.app_context():
        response = current_app.json.utc_response(value)
        assert response.mimetype == "application/json"
        return response.get_data()


@pytest.mark.parametrize("value", [
    {"data": [{"submitted_at": datetime(2026, 3, 1, 8, 15), "updated_at": datetime(2026, 3, 1, 8, 15, 0, 250),
               "nested": {"at": datetime(1999, 12, 31, 23, 59, 59, 999999)}, "amount": 1.5, "none": None}]},
    {"data": [{"at": datetime(2026, 3, 1), "name": "Zoë 🎓"}], "cursor": "abc"},
    ["\ud800 lone surrogate", datetime(2026, 3, 1, 8, 15, 0, 1)],  # orjson refuses it: Flask's encoder writes it
    {"money": Money(Decimal("1.50"), "RWF"), "at": datetime(2026, 3, 1, 8, 15)},
])
def test_a_page_with_naive_datetimes_says_what_its_formatted_records_said(app, value):
    assert utc_body(app, value) == karibu_body(app, formatted(value))


def test_a_page_with_naive_datetimes_stays_readable_in_debug(app):
    app.debug = True
    try:
        assert utc_body(app, {"at": datetime(2026, 3, 1, 8, 15)}) == b'{\n  "at": "2026-03-01T08:15:00Z"\n}\n'
    finally:
        app.debug = False
