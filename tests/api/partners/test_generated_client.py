"""A Python client generated from the live `/api/v1/openapi.json` with openapi-python-client (no generator
warnings allowed), used against a live server the way a partner's integration would use it."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from core.verification.demo import DEMO_RECORDS
from tests.events.test_doc_examples import example

# application/zip is a binary body: the generator maps only application/octet-stream to bytes by itself.
GENERATOR_CONFIG = "content_type_overrides:\n  application/zip: application/octet-stream\n"
CLIENT_PACKAGE = "karibu_client"


@pytest.fixture(scope="module")
def generation(live_server, tmp_path_factory):
    """The folder holding the client package generated from the served document."""
    folder = tmp_path_factory.mktemp("generated-client")
    (folder / "openapi.json").write_bytes(requests.get(f"{live_server}/api/v1/openapi.json", timeout=10).content)
    (folder / "config.yaml").write_text(GENERATOR_CONFIG)
    generator = Path(sys.executable).parent / "openapi-python-client"
    result = subprocess.run(
        [str(generator), "generate", "--path", "openapi.json", "--output-path", CLIENT_PACKAGE, "--meta", "none",
         "--config", "config.yaml"],
        cwd=folder, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": f"{generator.parent}{os.pathsep}{os.environ['PATH']}"})  # its ruff pass
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "warning" not in output.lower() and "unable to" not in output.lower(), output
    assert "skipping" not in output.lower(), output
    return folder


@pytest.fixture(scope="module")
def generated(generation):
    """The generated client package with its models, imported; removed from sys.modules after.

    The package's `__init__` does not import `models`: without the import here, `generated.models` would exist
    only after a test had imported an endpoint module (which imports the models), so a test running first on its
    pytest-xdist worker would not find it."""
    folder = generation
    sys.path.insert(0, str(folder))
    try:
        importlib.import_module(f"{CLIENT_PACKAGE}.models")
        yield importlib.import_module(CLIENT_PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.split(".")[0] == CLIENT_PACKAGE]:
            del sys.modules[name]


def api(generated, module: str):
    return importlib.import_module(f"{CLIENT_PACKAGE}.api.{module}")


def test_generated_client_lists_searches_fetches_updates_and_polls(generated, live_server, tenant, factory):
    client = generated.AuthenticatedClient(base_url=live_server, token=tenant.raw_key)
    made = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                last_name=f"Walker{number}") for number in range(5)]
    list_applications = api(generated, "applications.list_applications")

    seen, cursor, pages = [], generated.types.UNSET, 0
    while True:  # walk the cursor, two per page
        page = list_applications.sync(client=client, limit=2, cursor=cursor)
        assert isinstance(page, generated.models.ApplicationList), page
        seen += [record.id for record in page.data]
        pages += 1
        if not page.has_next:
            break
        cursor = page.cursor
    assert sorted(seen) == sorted(application.id for application in made) and pages == 3

    found = api(generated, "applications.search_applications").sync(client=client, q="walker3")
    assert [record.id for record in found.data] == [made[3].id]

    by_id = api(generated, "applications.get_applications_by_id").sync(client=client, ids=[made[0].id, made[1].id])
    assert sorted(record.id for record in by_id.data) == sorted([made[0].id, made[1].id])

    update = generated.models.ApplicationUpdate(id=made[0].id, decision=generated.models.ApplicationUpdateDecision(
        "accepted"), send_decision=True)
    update_applications = api(generated, "applications.update_applications")
    batch = generated.models.ApplicationUpdateBatch(updates=[update])
    first = update_applications.sync_detailed(client=client, body=batch, idempotency_key="walker-accept-1")
    result = first.parsed
    assert isinstance(result, generated.models.ApplicationUpdateResult), result
    assert result.updated == 1 and result.data[0].application.decision.value == "accepted"
    retried = update_applications.sync_detailed(client=client, body=batch, idempotency_key="walker-accept-1")
    assert "Idempotent-Replayed" not in first.headers and retried.headers["Idempotent-Replayed"] == "true"
    assert retried.parsed == result  # the first answer again, applied once (one decision.sent below)
    reused = update_applications.sync_detailed(
        client=client, idempotency_key="walker-accept-1",
        body=generated.models.ApplicationUpdateBatch(updates=[generated.models.ApplicationUpdate(id=made[1].id)]))
    assert reused.status_code == 422 and reused.parsed.reason == "idempotency_key_reused"

    events = api(generated, "events.list_events").sync(client=client, limit=50)
    assert isinstance(events, generated.models.EventPage), events
    sent = [event for event in events.data if event.type_ == "decision.sent"]
    assert [event.data.submission_id for event in sent] == [made[0].id]
    later = api(generated, "events.list_events").sync(client=client, cursor=events.cursor)
    assert later.data == [] and later.has_next is False  # polling from the cursor: nothing new


def test_generated_client_answers_errors_as_the_error_model(generated, live_server, tenant):
    client = generated.AuthenticatedClient(base_url=live_server, token=tenant.raw_key)
    refused = api(generated, "applications.list_applications").sync_detailed(client=client, cycle="No Such Cycle")
    assert refused.status_code == 400 and isinstance(refused.parsed, generated.models.Error)
    assert tenant.cycle.name in refused.parsed.error  # the valid cycle names are listed


def test_generated_client_verifies_a_trial_record(generated, live_server):
    client = generated.AuthenticatedClient(base_url=live_server, token="sk_trial_demo")
    record = next(record for record in DEMO_RECORDS if record.registry == "KNEC" and record.result == "authentic")
    body = generated.models.KNECKenya.from_dict(record.request)
    answer = api(generated, "verification.create_verification").sync(client=client, body=body)
    assert isinstance(answer, generated.models.VerificationSuccess), answer
    assert answer.record.id == record.reference and answer.billing.charged is False


def test_the_documented_client_example_walks_every_application(generation, live_server, tenant, factory, tmp_path):
    folder = generation
    made = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle) for _ in range(3)]
    code = example("api.md", "generated_client_listing.py").replace("limit=100", "limit=2")  # follow the cursor
    (tmp_path / "listing.py").write_text(code)
    result = subprocess.run([sys.executable, "listing.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(folder), "KARIBU_URL": live_server,
                                 "KARIBU_API_KEY": tenant.raw_key})
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted([application.id for application in made] + ["none"] * 3)
