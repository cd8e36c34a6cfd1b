"""`flask webhooks set|rotate|ping|log|enable|redeliver|recover` through the CLI runner."""
from __future__ import annotations

import json
import time

from tests.webhooks.conftest import RECEIVER_HOST, run_worker
from tests.webhooks.independent_verifier import verify


def invoke(app, *args):
    return app.test_cli_runner().invoke(args=["webhooks", *args])


def test_set_rotate_ping_log_enable(engine, factory, receiver):
    institution = factory.institution()
    url = receiver.url(RECEIVER_HOST)
    created = invoke(engine, "set", "--institution", institution.id, "--url", url, "--events",
                     "application.submitted,decision.sent", "--json")
    assert created.exit_code == 0, created.output
    payload = json.loads(created.output)
    assert set(payload) == {"endpoint_id", "signing_secret"} and payload["signing_secret"].startswith("whsec_")

    updated = invoke(engine, "set", "--institution", institution.id, "--url", url, "--include-name", "--json")
    assert json.loads(updated.output) == {"endpoint_id": payload["endpoint_id"]}

    rotated = invoke(engine, "rotate", "--institution", institution.id, "--json")
    secret = json.loads(rotated.output)["signing_secret"]
    assert secret != payload["signing_secret"]

    pinged = invoke(engine, "ping", "--institution", institution.id)
    assert pinged.exit_code == 0 and "webhook.test" in pinged.output
    run_worker(engine)
    [request] = receiver.requests
    verify(secret, request.headers, request.body, time.time())

    log = json.loads(invoke(engine, "log", "--institution", institution.id, "--json").output)
    [entry] = log["deliveries"]
    assert set(entry) == {"id", "event_id", "type", "status", "attempts", "last_response_code", "last_error_class",
                          "last_error", "next_attempt_at"}
    assert (entry["type"], entry["status"], entry["attempts"], entry["last_response_code"]) == (
        "webhook.test", "delivered", 1, 200)
    assert json.loads(invoke(engine, "log", "--institution", institution.id, "--status", "dead", "--json")
                      .output) == {"deliveries": []}

    human = invoke(engine, "log", "--institution", institution.id)
    assert entry["id"] in human.output and "delivered" in human.output

    redelivered = invoke(engine, "redeliver", "--institution", institution.id, entry["id"])
    assert redelivered.exit_code == 0
    run_worker(engine)
    assert len(receiver.requests) == 2

    enabled = invoke(engine, "enable", "--institution", institution.id)
    assert enabled.exit_code == 0 and "enabled" in enabled.output
    recovered = invoke(engine, "recover", "--institution", institution.id, "--since", "2020-01-01")
    assert recovered.exit_code == 0 and "Queued 0 deliveries" in recovered.output


def test_cli_errors_are_one_line_and_exit_non_zero(engine, factory, receiver):
    institution = factory.institution()
    refused = invoke(engine, "set", "--institution", institution.id, "--url", "https://169.254.169.254/", "--json")
    assert refused.exit_code == 1
    assert "url is not allowed" in refused.output and "Traceback" not in refused.output
    assert invoke(engine, "rotate", "--institution", institution.id).exit_code == 1
    bad_status = invoke(engine, "log", "--institution", institution.id, "--status", "nope")
    assert bad_status.exit_code == 1 and "status must be one of" in bad_status.output
    bad_since = invoke(engine, "recover", "--institution", institution.id, "--since", "yesterday")
    assert bad_since.exit_code == 2 and "--since" in bad_since.output
    unknown = invoke(engine, "set", "--institution", "ins_nope", "--url", receiver.url(RECEIVER_HOST))
    assert unknown.exit_code == 1 and "Institution not found" in unknown.output


def test_set_shows_the_query_token_masked_and_deliveries_carry_it(engine, factory, receiver):
    institution = factory.institution()
    token = "tok_cli_5e4d3c2b1a"
    created = invoke(engine, "set", "--institution", institution.id, "--url",
                     receiver.url(RECEIVER_HOST) + f"?token={token}")
    assert created.exit_code == 0, created.output
    assert f"{receiver.url(RECEIVER_HOST)}?token=•••• " in created.output.replace("\n", " ")
    assert token not in created.output

    invoke(engine, "ping", "--institution", institution.id)
    run_worker(engine)
    assert receiver.server.wait_for(1)[0].path == f"/hooks?token={token}"
    log = invoke(engine, "log", "--institution", institution.id, "--json")
    assert json.loads(log.output)["deliveries"][0]["status"] == "delivered" and token not in log.output
