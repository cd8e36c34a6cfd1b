"""Test mode in the portal and the CLI (issue #42): the API keys page and `api-keys create --test` make `sk_test_`
keys, the "Viewing test data" switch shows the sandbox (banner on every page, a way back), test messages are marked
"Test", and `sandbox reset` restores the sandbox."""
from __future__ import annotations

import json
import re

from sqlalchemy import func, select

from core.db import db
from core.models import Application, Institution
from core.scoping import InstitutionScope
from tests.conftest import auth_header
from tests.institutions.test_test_mode_api import all_ids, live_institution, test_key, undecided_id
from tests.messages.conftest import send_decisions
from tests.webhooks.conftest import RECEIVER_HOST, run_worker

BANNER = "Viewing test data"


def test_the_api_keys_page_makes_a_test_key(portal_as, client):
    admin = portal_as("admin")
    page = admin.get("/api-keys").get_data(as_text=True)
    assert 'value="test"' in page
    created = admin.post("/api-keys", {"name": "CRM sandbox", "mode": "test"})
    assert created.status_code == 201
    raw = re.search(r'<code id="new-key">(sk_\w+)</code>', created.get_data(as_text=True)).group(1)
    assert raw.startswith("sk_test_")
    assert len(all_ids(client, raw)) >= 200
    live = admin.post("/api-keys", {"name": "CRM", "mode": "live"})
    assert re.search(r'<code id="new-key">(sk_live_\w+)</code>', live.get_data(as_text=True))
    assert admin.post("/api-keys", {"name": "CRM", "mode": "staging"}).status_code == 422


def test_the_switch_shows_the_sandbox_with_a_banner_and_a_way_back(app, portal_as, factory, client):
    institution, _, applications = live_institution(factory)
    staff = portal_as("admin", institution=institution)
    key = test_key(app, institution)
    sandbox_id = undecided_id(client, key)
    assert send_decisions(client, key, [sandbox_id]).status_code == 200

    live_page = staff.get("/applicants").get_data(as_text=True)
    assert applications[0].id in live_page and BANNER not in live_page

    assert staff.post("/test-data").status_code == 302
    for path in ("/applicants", "/dashboard", "/messages", "/account"):
        assert BANNER in staff.get(path).get_data(as_text=True), path
    test_page = staff.get("/applicants").get_data(as_text=True)
    assert applications[0].id not in test_page
    assert staff.get(f"/applicants/{sandbox_id}").status_code == 200
    assert staff.get(f"/applicants/{applications[0].id}").status_code == 404
    messages = staff.get("/messages").get_data(as_text=True)
    assert ">Test<" in messages

    assert staff.post("/test-data").status_code == 302  # back to live data
    back = staff.get("/applicants").get_data(as_text=True)
    assert BANNER not in back and applications[0].id in back
    assert staff.get(f"/applicants/{sandbox_id}").status_code == 404
    assert staff.post("/test-data", csrf=False).status_code == 400


def test_cli_creates_a_test_key_and_resets_the_sandbox(app, client, factory):
    institution, _, _ = live_institution(factory)
    runner = app.test_cli_runner()
    created = runner.invoke(args=["api-keys", "create", "--institution", institution.id, "--test", "--json"])
    assert created.exit_code == 0, created.output
    payload = json.loads(created.output)
    assert payload["api_key"].startswith("sk_test_") and payload["key_id"]
    live = json.loads(runner.invoke(args=["api-keys", "create", "--institution", institution.id,
                                          "--json"]).output)
    assert live["api_key"].startswith("sk_live_")

    key = payload["api_key"]
    before = all_ids(client, key)
    changed = min(before)
    body = {"updates": [{"id": changed, "stage": "interview"}]}
    assert client.patch("/api/v1/applications/update", json=body, headers=auth_header(key)).status_code == 200

    declined = runner.invoke(args=["sandbox", "reset", "--institution", institution.id], input="n\n")
    assert declined.exit_code == 1 and "Aborted" in declined.output
    assert all_ids(client, key) == before
    reset = runner.invoke(args=["sandbox", "reset", "--institution", institution.id, "--yes"])
    assert reset.exit_code == 0, reset.output
    assert "200 sample applications" in reset.output
    after = all_ids(client, key)
    assert len(after) == 200 and not after & before
    assert client.get("/api/v1/events", headers=auth_header(key)).get_json()["data"] == []
    with app.app_context():
        sandbox = InstitutionScope(institution.id).sandbox()
        assert db.session.scalar(select(func.count()).select_from(Application)
                                 .where(Application.institution_id == sandbox.id)) == 200
        assert db.session.scalar(select(func.count()).select_from(Institution)) == 2

    as_json = runner.invoke(args=["sandbox", "reset", "--institution", institution.id, "--json"])
    assert json.loads(as_json.stdout)["applications"] == 200
    unknown = runner.invoke(args=["sandbox", "reset", "--institution", "ins_missing", "--yes"])
    assert unknown.exit_code == 1 and "Institution not found" in unknown.output


def test_the_webhooks_page_sets_the_test_endpoint_while_viewing_test_data(engine, portal_as, factory, receiver):
    institution, live_key, applications = live_institution(factory)
    admin = portal_as("admin", institution=institution)
    client = engine.test_client()
    assert admin.post("/webhooks", {"url": receiver.url(RECEIVER_HOST, "/live"), "events": ["decision.sent"]},
                      htmx=True).status_code == 200
    admin.post("/test-data")
    assert admin.post("/webhooks", {"url": receiver.url(RECEIVER_HOST, "/test"), "events": ["decision.sent"]},
                      htmx=True).status_code == 200
    key = test_key(engine, institution)
    for caller, application_id in ((key, min(all_ids(client, key))), (live_key, applications[0].id)):
        assert send_decisions(client, caller, [application_id]).status_code == 200
    run_worker(engine)
    paths = {request.path: request.headers["X-Karibu-Mode"] for request in receiver.server.wait_for(2)}
    assert paths == {"/test": "test", "/live": "live"}
