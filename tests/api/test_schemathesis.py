"""Property-based run of schemathesis over the whole OpenAPI document, against the app with a seeded
institution: no server error, documented status codes and content types, responses matching their schemas,
and authentication enforced wherever the document requires it.
"""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_schema_conformance,
    status_code_conformance,
)

from core.events import emission
from core.db import db
from core.scoping import InstitutionScope
from tests.conftest import auth_header
from tests.api.conftest import make_tenant

# Minutes of waiting on an outage or a clock: scheduled first, so parallel test workers finish together.
pytestmark = pytest.mark.long_running

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          ignored_auth]


@pytest.fixture
def seeded(factory):
    tenant = make_tenant(factory, "Schemathesis University")
    start = datetime(2026, 1, 5, 8, 0, 0)
    for number in range(12):
        factory.application(tenant.institution, program=tenant.program if number % 3 else tenant.other_program,
                            cycle=tenant.cycle, first_name=("Aimée", "=1+1", "Jean-Paul")[number % 3],
                            decision=("none", "accepted", "rejected")[number % 3], paid=number % 2 == 0,
                            submitted_at=start + timedelta(hours=number))
    with factory.app.app_context():  # the events feed has something to show
        for _ in range(3):
            emission.emit_webhook_test(InstitutionScope(tenant.institution.id))
        db.session.commit()
    return tenant


@pytest.fixture
def api_schema(app, seeded):
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_api_conforms_to_its_document(case, seeded, live_registries):
    case.call_and_validate(headers=auth_header(seeded.raw_key), checks=CHECKS)
