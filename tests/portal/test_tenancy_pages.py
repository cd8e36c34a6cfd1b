"""Cross-tenant checks through HTTP: a signed-in admin of one institution sees and reaches nothing of another.

The data is the same as the core-level probes of `tests/architecture/test_tenancy.py` (one row of every
tenant-owned model per institution, each tagged with its institution's name).
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.architecture.test_tenancy import populate
from tests.conftest import auth_header


@pytest.fixture
def tenants(app):
    with app.app_context():
        return populate("alpha", issuer="KNEC"), populate("beta", issuer="NESA")


@pytest.fixture
def alpha_admin(portal_as, tenants):
    return portal_as("admin", institution=SimpleNamespace(id=tenants[0].institution_id))


@pytest.mark.parametrize("path, marker", [
    ("/dashboard", "Cycle {tag}"),
    ("/cycles", "Program {tag}"),
    ("/applicants", "Surname{tag}"),
    ("/users", "staff.{tag}@example.rw"),
    ("/audit", "actor-{tag}"),
    ("/webhooks", "{tag}.example.org"),
    ("/webhooks/deliveries", "{delivery_id}"),
    ("/verification/usage.csv", "{issuer}"),
])
def test_lists_show_own_rows_only(alpha_admin, tenants, path, marker):
    alpha, beta = tenants
    text = alpha_admin.get(path).get_data(as_text=True)
    assert marker.format(**vars(alpha)) in text
    assert marker.format(**vars(beta)) not in text


@pytest.mark.parametrize("path, status", [
    ("/dashboard?cycle={cycle_id}", 404),
    ("/applicants/{application_id}", 404),
    ("/applicants/{application_id}/documents/{document_id}", 404),
    ("/webhooks/deliveries/{delivery_id}", 404),
    ("/webhooks/deliveries?before={delivery_id}", 400),
    ("/verification?application={application_id}", 404),
])
def test_foreign_ids_are_refused(alpha_admin, tenants, path, status):
    alpha, beta = tenants
    assert alpha_admin.get(path.format(**vars(alpha))).status_code == 200
    assert alpha_admin.get(path.format(**vars(beta))).status_code == status


def test_api_institution_describes_only_the_callers_pipeline(app, client, tenants):
    alpha, beta = tenants
    with app.app_context():
        from core.accounts.api_keys import create_api_key
        from core.scoping import InstitutionScope
        _, raw_key = create_api_key(InstitutionScope(alpha.institution_id), name="probe")
    stages = {stage["id"] for stage in
              client.get("/api/v1/institution", headers=auth_header(raw_key)).get_json()["institution"]["stages"]}
    assert alpha.stage_key in stages and beta.stage_key not in stages
