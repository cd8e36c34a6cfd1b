"""Fixtures of the verification tests: billed institutions and request helpers (the registry simulator
fixtures are shared, in tests/simulators.py)."""
from __future__ import annotations

import io
import json
from decimal import Decimal

import pytest

from core.db import db
from core.models import Institution


@pytest.fixture
def billed_institution(app, factory):
    """An institution with its own agreement price, and a live key: `(institution, raw_key)`."""
    institution = factory.institution("Université de Test")
    with app.app_context():
        row = db.session.get(Institution, institution.id)
        row.verification_price = Decimal("2.75")
        row.verification_currency = "EUR"
        db.session.commit()
    _, raw_key = factory.api_key(institution)
    return institution, raw_key


def post_json(client, path: str, body, headers: dict | None = None, **kwargs):
    """POST a JSON body, leaving the body readable on `response.request` for the OpenAPI check."""
    data = json.dumps(body).encode()
    response = client.post(path, data=data, content_type="application/json", headers=headers or {}, **kwargs)
    response.request.environ["wsgi.input"] = io.BytesIO(data)
    return response


def post_raw(client, path: str, data: str, headers: dict, content_type: str | None = None):
    raw = data.encode()
    response = client.post(path, data=raw, content_type=content_type, headers=headers)
    response.request.environ["wsgi.input"] = io.BytesIO(raw)
    return response
