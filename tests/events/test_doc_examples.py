"""The client programs and receivers printed in docs/api.md and docs/webhooks.md, run as written.

Each is the fenced block after an `<!-- example: NAME -->` marker; the test extracts and runs it, so the docs
cannot drift from code that works.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from core.db import db
from core.events import emission
from core.events.emission import event_body
from core.models import Event
from core.scoping import InstitutionScope
from core.webhooks.signing import delivery_headers, generate_secret
from tests.live_server import base_url, serving

DOCS = Path(__file__).resolve().parents[2] / "docs"


def example(document: str, name: str) -> str:
    text = (DOCS / document).read_text()
    match = re.search(rf"<!-- example: {re.escape(name)} -->\n```\w+\n(.*?)```", text, re.S)
    assert match, f"docs/{document} has no example {name}"
    return match.group(1)


@pytest.fixture(scope="module")
def live_server(app):
    with serving(app) as server:
        yield base_url(server)


def run_example(code: str, tmp_path: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "example.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return result


def test_paging_example_walks_every_application(live_server, tenant, factory, tmp_path):
    made = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                decision="accepted" if number % 2 else "none") for number in range(5)]
    code = example("api.md", "page_applications.py")
    assert '"limit": 500' in code
    code = code.replace('"limit": 500', '"limit": 2')  # small pages, so the walk follows the cursor
    env = {"KARIBU_URL": live_server, "KARIBU_API_KEY": tenant.raw_key}

    everything = run_example(code, tmp_path, env).stdout.splitlines()
    accepted = run_example(code, tmp_path, env, "accepted").stdout.splitlines()

    assert everything[-1] == "5 applications"
    assert sorted(line.split()[0] for line in everything[:-1]) == sorted(a.id for a in made)
    assert accepted[-1] == "2 applications"


def test_polling_example_handles_each_event_once_across_runs(app, live_server, tenant, emit, tmp_path):
    code = example("api.md", "poll_events.py")
    env = {"KARIBU_URL": live_server, "KARIBU_API_KEY": tenant.raw_key,
           "KARIBU_CURSOR_FILE": str(tmp_path / "cursor")}
    first = emit(tenant.institution, 3)

    run1 = run_example(code, tmp_path, env, "--once").stdout.splitlines()
    second = emit(tenant.institution, 2)
    run2 = run_example(code, tmp_path, env, "--once").stdout.splitlines()
    run3 = run_example(code, tmp_path, env, "--once").stdout.splitlines()

    assert [line.split()[1] for line in run1] == first
    assert [line.split()[1] for line in run2] == second
    assert run3 == []
    assert all(line.startswith("webhook.test evt_") for line in run1 + run2)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_listening(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else "receiver exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the receiver did not start listening")


@pytest.fixture
def signed_delivery(app, tenant):
    """A real event's body and headers made by Karibu's own signing code, with a fresh secret."""
    secret = generate_secret()
    with app.app_context():
        event = emission.emit_webhook_test(InstitutionScope(tenant.institution.id))
        db.session.commit()
        event = db.session.get(Event, event.id)
        body = event_body(event)
        headers = delivery_headers(secret=secret, timestamp=int(time.time()), body=body, event_id=event.id,
                                   event_type=event.type, institution_id=event.institution_id)
    return secret, body, headers, json.loads(body)


def _check_receiver(url: str, body: bytes, headers: dict, envelope: dict, *, timestamp_header="X-Karibu-Timestamp",
                    signature_header="X-Karibu-Signature") -> None:
    accepted = requests.post(url, data=body, headers=headers, timeout=10)
    assert accepted.status_code == 204
    again = requests.post(url, data=body, headers=headers, timeout=10)
    assert again.status_code == 204
    tampered = requests.post(url, data=body.replace(b"webhook.test", b"webhook.tesT"), headers=headers, timeout=10)
    assert tampered.status_code == 400
    stale = {**headers, timestamp_header: str(int(time.time()) - 3600)}
    assert requests.post(url, data=body, headers=stale, timeout=10).status_code == 400
    unsigned = {name: value for name, value in headers.items() if name != signature_header}
    assert requests.post(url, data=body, headers=unsigned, timeout=10).status_code == 400


def _run_receiver(command: list[str], cwd: Path, secret: str, signed, **headers_checked) -> str:
    _, body, headers, envelope = signed
    port = _free_port()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "KARIBU_WEBHOOK_SECRET": secret, "PORT": str(port)})
    try:
        _wait_until_listening(port, process)
        _check_receiver(f"http://127.0.0.1:{port}/karibu/webhooks", body, headers, envelope, **headers_checked)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
    return output


def test_flask_receiver_verifies_the_signature(signed_delivery, tmp_path):
    secret, _, _, envelope = signed_delivery
    (tmp_path / "receiver.py").write_text(example("webhooks.md", "webhook_receiver_flask.py"))
    output = _run_receiver([sys.executable, "receiver.py"], tmp_path, secret, signed_delivery)
    handled = [line for line in output.splitlines() if not line.startswith(" * ")]  # Flask's start banner
    assert handled == [f"webhook.test {envelope['event_id']}"], "handled once, deduplicated"


@pytest.fixture(scope="session")
def express_dir(tmp_path_factory):
    """Express from the npm registry, installed once into a temporary folder."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed: the Express receiver is not run")
    folder = tmp_path_factory.mktemp("express")
    (folder / "package.json").write_text('{"name": "karibu-receiver-test", "private": true}')
    installed = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "express@4", "standardwebhooks@1"],
                               cwd=folder,
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    return folder


def test_express_receiver_verifies_the_signature(express_dir, signed_delivery):
    secret, _, _, envelope = signed_delivery
    (express_dir / "receiver.js").write_text(example("webhooks.md", "webhook_receiver_express.js"))
    output = _run_receiver(["node", "receiver.js"], express_dir, secret, signed_delivery)
    assert output.splitlines() == [f"webhook.test {envelope['event_id']}"], "handled once, deduplicated"


STANDARD_HEADERS = {"timestamp_header": "webhook-timestamp", "signature_header": "webhook-signature"}


def test_standard_webhooks_flask_receiver_verifies_the_signature(signed_delivery, tmp_path):
    secret, _, _, envelope = signed_delivery
    (tmp_path / "receiver.py").write_text(example("webhooks.md", "webhook_receiver_standard.py"))
    output = _run_receiver([sys.executable, "receiver.py"], tmp_path, secret, signed_delivery, **STANDARD_HEADERS)
    handled = [line for line in output.splitlines() if not line.startswith(" * ")]  # Flask's start banner
    assert handled == [f"webhook.test {envelope['event_id']}"], "handled once, deduplicated"


def test_standard_webhooks_express_receiver_verifies_the_signature(express_dir, signed_delivery):
    secret, _, _, envelope = signed_delivery
    (express_dir / "receiver-standard.js").write_text(example("webhooks.md", "webhook_receiver_standard.js"))
    output = _run_receiver(["node", "receiver-standard.js"], express_dir, secret, signed_delivery,
                           **STANDARD_HEADERS)
    assert output.splitlines() == [f"webhook.test {envelope['event_id']}"], "handled once, deduplicated"
