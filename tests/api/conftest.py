"""Fixtures of the API tests: two institutions, each with a live key, programs and a cycle."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import pytest

from tests.conftest import auth_header
from tests.openapi_check import assert_conforms


@dataclass
class Tenant:
    institution: object
    raw_key: str
    program: object
    other_program: object
    cycle: object

    @property
    def headers(self) -> dict:
        return auth_header(self.raw_key)


def make_tenant(factory, name: str) -> Tenant:
    institution = factory.institution(name)
    _, raw_key = factory.api_key(institution)
    program = factory.program(institution, name=f"{name} Computer Science")
    other_program = factory.program(institution, name=f"{name} Nursing", fee="75.50", currency="USD")
    cycle = factory.cycle(institution, programs=[program, other_program], name=f"{name} 2026 Intake")
    return Tenant(institution, raw_key, program, other_program, cycle)


@pytest.fixture
def tenant(factory) -> Tenant:
    return make_tenant(factory, "Alpha University")


@pytest.fixture
def other_tenant(factory) -> Tenant:
    return make_tenant(factory, "Beta University")


@pytest.fixture
def api_get(client):
    """GET an API path with a tenant's key; every response is checked against the OpenAPI document."""
    def get(tenant: Tenant | None, path: str, params=None, headers=None):
        sent = dict(tenant.headers) if tenant is not None else {}
        sent.update(headers or {})
        response = client.get(path, query_string=params, headers=sent)
        assert_conforms(response)
        return response
    return get


def parse_csv(response) -> list[dict]:
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.get_data(as_text=True), newline="")))


def walk(api_get, tenant, path: str, params: dict, between_pages=None) -> list[dict]:
    """Every record of a JSON listing, page by page; `between_pages(page_number)` runs after each page."""
    records, cursor, page_number = [], None, 0
    while True:
        response = api_get(tenant, path, {**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        records.extend(body["data"])
        page_number += 1
        if between_pages is not None:
            between_pages(page_number)
        if not body["has_next"]:
            assert "cursor" not in body
            return records
        cursor = body["cursor"]
