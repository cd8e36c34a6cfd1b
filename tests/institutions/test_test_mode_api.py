"""Test mode (issue #42): an `sk_test_` key reaches the institution's sandbox (sample applicants made on first use),
never a live record, and a live key never a sandbox record; test-mode decisions reach nobody, webhooks and the
events feed say which mode an event belongs to, verifications in test mode are never billed."""
from __future__ import annotations

import json

from sqlalchemy import func, select

from core.accounts.api_keys import create_api_key
from core.db import db
from core.models import Application, Institution, VerificationCharge
from core.scoping import InstitutionScope
from core.webhooks.endpoints import save_endpoint
from tests.conftest import auth_header
from tests.messages.conftest import all_messages, run_message_worker, send_decisions
from tests.webhooks.conftest import RECEIVER_HOST, run_worker


def live_institution(factory, name="University of Rwanda"):
    institution = factory.institution(name)
    program = factory.program(institution, name="MBChB")
    cycle = factory.cycle(institution, programs=[program], name="2026 Intake")
    applications = [factory.application(institution, program=program, cycle=cycle, first_name="Aline",
                                        email=f"aline{n}@example.rw") for n in range(3)]
    _, live_key = factory.api_key(institution)
    return institution, live_key, applications


def test_key(app, institution) -> str:
    with app.app_context():
        _, raw_key = create_api_key(InstitutionScope(institution.id), name="integration", test=True)
    return raw_key


test_key.__test__ = False  # a helper, not a test


def all_ids(client, key) -> set[str]:
    body = client.get("/api/v1/applications", query_string={"limit": 1000}, headers=auth_header(key)).get_json()
    return {record["id"] for record in body["data"]}


def undecided_id(client, key) -> str:
    """A sandbox application with no decision yet: sending one changes it, so it writes a message and an event
    (the sample applicants' decisions are drawn at random)."""
    body = client.get("/api/v1/applications", query_string={"limit": 1000}, headers=auth_header(key)).get_json()
    return min(record["id"] for record in body["data"] if record["application"]["decision"] == "none")


def test_a_test_key_lists_only_the_sandbox_and_a_live_key_only_live_records(app, client, factory):
    institution, live_key, applications = live_institution(factory)
    key = test_key(app, institution)
    assert key.startswith("sk_test_")

    sandbox_ids = all_ids(client, key)
    live_ids = all_ids(client, live_key)
    assert len(sandbox_ids) >= 200
    assert live_ids == {application.id for application in applications}
    assert not sandbox_ids & live_ids

    found = client.get("/api/v1/applications/by-id", query_string={"ids": applications[0].id},
                       headers=auth_header(key)).get_json()
    assert found["data"] == [] and found["missing"] == [applications[0].id]
    cycles = client.get("/api/v1/cycles", headers=auth_header(key)).get_json()["data"]
    assert [cycle["name"] for cycle in cycles] == ["2026 Intake"]  # copied from the live institution
    assert all_ids(client, test_key(app, institution)) == sandbox_ids  # one sandbox per institution


def test_a_test_mode_patch_changes_only_the_sandbox(app, client, factory):
    institution, live_key, applications = live_institution(factory)
    key = test_key(app, institution)
    sandbox_id = min(all_ids(client, key))

    refused = client.patch("/api/v1/applications/update", headers=auth_header(key),
                           json={"updates": [{"id": applications[0].id, "stage": "interview"}]})
    assert refused.status_code == 400
    assert applications[0].id in json.dumps(refused.get_json())
    changed = client.patch("/api/v1/applications/update", headers=auth_header(key),
                           json={"updates": [{"id": sandbox_id, "stage": "interview"}]})
    assert changed.status_code == 200 and changed.get_json()["data"][0]["application"]["stage"] == "interview"

    live = client.get("/api/v1/applications/by-id", query_string={"ids": applications[0].id},
                      headers=auth_header(live_key)).get_json()["data"]
    assert live[0]["application"]["stage"] == applications[0].stage
    with app.app_context():
        assert db.session.get(Application, applications[0].id).stage == applications[0].stage


def test_sandboxes_are_hidden_companions(app, client, factory):
    institution, _, _ = live_institution(factory)
    all_ids(client, test_key(app, institution))
    with app.app_context():
        sandbox = db.session.scalars(select(Institution).where(Institution.sandbox_of_id == institution.id)).one()
        assert sandbox.id != institution.id
        assert db.session.scalar(select(func.count()).select_from(Application)
                                 .where(Application.institution_id == sandbox.id)) >= 200


def test_a_test_mode_decision_sends_no_email_and_its_webhook_says_test(mail_app, smtp, engine, factory,
                                                                      receiver):
    institution, live_key, applications = live_institution(factory)
    key = test_key(engine, institution)
    client = engine.test_client()
    with engine.app_context():
        save_endpoint(InstitutionScope(institution.id), receiver.url(RECEIVER_HOST), "decision.sent")
    sandbox_id = undecided_id(client, key)

    assert send_decisions(client, key, [sandbox_id]).status_code == 200
    run_message_worker(engine)
    assert smtp.received == []
    [message] = [row for row in all_messages(engine) if row.application_id == sandbox_id]
    assert message.status == "test"

    assert send_decisions(client, live_key, [applications[0].id]).status_code == 200
    run_message_worker(engine)
    assert [received.recipients for received in smtp.received] == [["aline0@example.rw"]]  # the sink works
    run_worker(engine)
    requests = receiver.server.wait_for(2)
    modes = {json.loads(request.body)["data"]["submission_id"]:
             (request.headers["X-Karibu-Mode"], json.loads(request.body)["livemode"]) for request in requests}
    assert modes == {sandbox_id: ("test", False), applications[0].id: ("live", True)}


def test_a_test_endpoint_receives_test_events_only(engine, factory, receiver):
    institution, live_key, applications = live_institution(factory)
    client = engine.test_client()
    runner = engine.test_cli_runner()
    live = runner.invoke(args=["webhooks", "set", "--institution", institution.id, "--events",
                               "decision.sent", "--url", receiver.url(RECEIVER_HOST, "/live"), "--json"])
    test = runner.invoke(args=["webhooks", "set", "--institution", institution.id, "--events",
                               "decision.sent", "--url", receiver.url(RECEIVER_HOST, "/test"), "--test",
                               "--json"])
    assert live.exit_code == 0 and test.exit_code == 0, test.output
    assert json.loads(live.output)["endpoint_id"] != json.loads(test.output)["endpoint_id"]
    key = test_key(engine, institution)
    sandbox_id = undecided_id(client, key)
    for caller, application_id in ((key, sandbox_id), (live_key, applications[0].id)):
        assert send_decisions(client, caller, [application_id]).status_code == 200
    run_worker(engine)
    paths = {request.path: request.headers["X-Karibu-Mode"] for request in receiver.server.wait_for(2)}
    assert paths == {"/test": "test", "/live": "live"}


def test_the_events_feed_separates_the_modes(app, client, factory):
    institution, live_key, applications = live_institution(factory)
    key = test_key(app, institution)
    sandbox_id = undecided_id(client, key)
    for caller, application_id in ((key, sandbox_id), (live_key, applications[0].id)):
        assert send_decisions(client, caller, [application_id]).status_code == 200

    test_feed = client.get("/api/v1/events", headers=auth_header(key)).get_json()["data"]
    live_feed = client.get("/api/v1/events", headers=auth_header(live_key)).get_json()["data"]
    assert [(item["data"]["submission_id"], item["livemode"]) for item in test_feed] == [(sandbox_id, False)]
    assert [(item["data"]["submission_id"], item["livemode"]) for item in live_feed] == [(applications[0].id, True)]
    foreign = client.get(f"/api/v1/events/{live_feed[0]['event_id']}", headers=auth_header(key))
    assert foreign.status_code == 404


def test_a_verification_in_test_mode_uses_the_demo_records_and_is_never_billed(app, client, factory):
    institution, _, _ = live_institution(factory)
    key = test_key(app, institution)
    issuers = client.get("/api/v1/verifications/issuers", headers=auth_header(key)).get_json()["data"]
    issuer = next(issuer for issuer in issuers if issuer.get("demo_requests"))
    response = client.post("/api/v1/verifications", json=issuer["demo_requests"][0], headers=auth_header(key))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["billing"]["charged"] is False
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(VerificationCharge)) == 0
