"""Deliveries to a real HTTPS receiver verify with the `standardwebhooks` libraries (Python and npm) and with
the spec's recipe, for secrets made now and for a secret made before Standard Webhooks support."""
from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import time

import pytest
import standardwebhooks

from core.db import db
from core.scoping import InstitutionScope
from core.webhooks.endpoints import get_endpoint, save_endpoint
from core.webhooks.log import send_test_ping
from core.webhooks.runtime import runtime
from tests.webhooks.conftest import RECEIVER_HOST, run_worker
from tests.webhooks.independent_verifier import verify

NODE_VERIFIER = """
const { Webhook } = require("standardwebhooks");
const [secret, raw] = [process.env.SW_SECRET, Buffer.from(process.env.SW_BODY_BASE64, "base64")];
const headers = JSON.parse(process.env.SW_HEADERS);
const event = new Webhook(secret).verify(raw.toString("utf8"), headers); // throws on a bad signature
console.log(event.event_id);
"""


def old_format_secret() -> str:
    """A secret as Karibu made them before Standard Webhooks support: `whsec_` + 43 URL-safe characters."""
    return "whsec_" + secrets.token_urlsafe(32)


def library_secret_for_old(secret: str) -> str:
    """What docs/webhooks.md tells a partner with an old secret to give a Standard Webhooks library."""
    return "whsec_" + base64.b64encode(secret.encode("utf-8")).decode("ascii")


def deliver_ping(app, institution, receiver, *, old_secret: str | None = None):
    """Configure the endpoint (optionally putting an old-format secret in place), ping it; the secret and
    the request the receiver got."""
    scope = InstitutionScope(institution.id)
    with app.app_context():
        _, secret = save_endpoint(scope, receiver.url(RECEIVER_HOST))
        if old_secret is not None:
            get_endpoint(scope).secret_ciphertext = runtime.secret_box().encrypt(old_secret)
            db.session.commit()
            secret = old_secret
        send_test_ping(scope)
    run_worker(app)
    [request] = receiver.server.wait_for(1)
    return secret, request


def lowered(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def test_new_secret_is_base64_and_verifies_both_ways_unchanged(engine, factory, receiver):
    secret, request = deliver_ping(engine, factory.institution(), receiver)
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:], validate=True)) == 32
    headers = lowered(request.headers)

    event = standardwebhooks.Webhook(secret).verify(request.body, headers)
    assert verify(secret, headers, request.body, time.time()) == event
    assert headers["webhook-id"] == headers["x-karibu-event-id"] == event["event_id"]
    assert headers["webhook-timestamp"] == headers["x-karibu-timestamp"]
    assert headers["webhook-signature"].startswith("v1,") and headers["x-karibu-signature"].startswith("v1=")

    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(secret).verify(request.body.replace(b"webhook.test", b"webhook.tesT"), headers)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(secret).verify(request.body, {**headers, "webhook-id": "evt_other"})


def test_secret_made_before_the_change_verifies_both_ways(engine, factory, receiver):
    old = old_format_secret()
    secret, request = deliver_ping(engine, factory.institution(), receiver, old_secret=old)
    headers = lowered(request.headers)

    verify(old, headers, request.body, time.time())  # the spec's recipe: unchanged for old secrets
    event = standardwebhooks.Webhook(library_secret_for_old(old)).verify(request.body, headers)
    assert event["event_id"] == headers["webhook-id"]
    # An old secret is not base64: as it is, the library refuses it or decodes it to another key.
    with pytest.raises((ValueError, standardwebhooks.WebhookVerificationError)):
        standardwebhooks.Webhook(old).verify(request.body, headers)


@pytest.fixture(scope="session")
def node_standardwebhooks(tmp_path_factory):
    """The npm `standardwebhooks` package, installed once into a temporary folder."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed: the npm standardwebhooks verifier is not run")
    folder = tmp_path_factory.mktemp("standardwebhooks-npm")
    (folder / "package.json").write_text('{"name": "karibu-standardwebhooks-test", "private": true}')
    installed = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "standardwebhooks@1"], cwd=folder,
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    (folder / "verify.js").write_text(NODE_VERIFIER)
    return folder


def node_verify(folder, secret: str, request) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "SW_SECRET": secret,
           "SW_BODY_BASE64": base64.b64encode(request.body).decode(), "SW_HEADERS": json.dumps(request.headers)}
    return subprocess.run(["node", "verify.js"], cwd=folder, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("made_before_the_change", [False, True])
def test_npm_standardwebhooks_verifies_deliveries(engine, factory, receiver, node_standardwebhooks,
                                                  made_before_the_change):
    old = old_format_secret() if made_before_the_change else None
    secret, request = deliver_ping(engine, factory.institution(), receiver, old_secret=old)
    library_secret = library_secret_for_old(secret) if made_before_the_change else secret

    verified = node_verify(node_standardwebhooks, library_secret, request)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.strip() == lowered(request.headers)["webhook-id"]

    tampered = type(request)(request.method, request.path, request.headers, request.body + b" ", 0.0)
    refused = node_verify(node_standardwebhooks, library_secret, tampered)
    assert refused.returncode != 0 and "No matching signature found" in refused.stderr
