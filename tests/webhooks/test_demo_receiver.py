"""Webhooks in the demo: the development receiver (`flask webhook-receiver`, started by scripts/run.sh) is the
one http/loopback target WEBHOOK_DEV_RECEIVER_URL admits; the Webhooks page offers it with one click, clearly
marked; a ping arrives there signed and the receiver's page says the signature is verified. Without the
setting (every deployment but the demo) the production rules hold: https only, no private targets."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from core.config import ConfigurationError
from core.db import db
from core.models.webhooks import WebhookEndpoint
from tests.conftest import REDIS_URL, TEST_SECRET_KEY, app_config
from tests.portal.conftest import _fresh_login_counters, admin, portal_as  # noqa: F401 (fixtures)
from tests.webhooks.conftest import free_port, run_worker
from wsgi import create_app

ROOT = Path(__file__).resolve().parents[2]


def _text(response) -> str:
    return response.get_data(as_text=True)


@pytest.fixture(scope="module")
def receiver_process(database_url):
    """`flask webhook-receiver` on a free port, reading the test database (one for the module). Yields its
    base URL."""
    environment = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": TEST_SECRET_KEY,
                   "REDIS_URL": REDIS_URL}
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "webhook-receiver", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment, cwd=ROOT)
    try:
        banner = process.stdout.readline()
        assert banner.startswith("Development webhook receiver on http://127.0.0.1:"), banner + process.stderr.read()
        yield banner.split()[4].rstrip("/")
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def dev_receiver(receiver_process, app, redis_client, monkeypatch):
    """The app's WEBHOOK_DEV_RECEIVER_URL set to the running receiver, as scripts/run.sh does."""
    monkeypatch.setitem(app.config, "WEBHOOK_DEV_RECEIVER_URL", receiver_process)
    redis_client.flushdb()
    yield receiver_process
    redis_client.flushdb()


def test_production_rules_hold_by_default(admin):
    page = _text(admin.get("/webhooks"))
    assert "Development receiver" not in page and "Use the development receiver" not in page
    refused = admin.post("/webhooks", {"url": "http://127.0.0.1:8766/hooks/x", "events": ["decision.sent"]}, htmx=True)
    assert refused.status_code == 422
    assert "This endpoint URL is not allowed: the URL must use https." in _text(refused)
    loopback = admin.post("/webhooks", {"url": "https://127.0.0.1:8766/hooks/x", "events": ["decision.sent"]},
                          htmx=True)
    assert loopback.status_code == 422 and "127.0.0.1 is a loopback address" in _text(loopback)
    assert admin.post("/webhooks/dev-receiver", htmx=True).status_code == 404


def test_one_click_and_a_signed_ping_shows_verified_on_the_receivers_page(app, admin, dev_receiver):
    page = _text(admin.get("/webhooks"))
    assert "Development receiver" in page and "demo only" in page
    assert f'href="{dev_receiver}/"' in page

    chosen = admin.post("/webhooks/dev-receiver", htmx=True)
    assert chosen.status_code == 200
    html = _text(chosen)
    assert re.search(r'<code id="signing-secret">whsec_', html), "the new secret is shown once, as for any endpoint"
    assert html.count("go to the development receiver") == 1 and "development receiver</span>" in html
    assert 'id="dev-receiver-in-use"' in _text(admin.get("/webhooks"))
    with app.app_context():
        endpoint = db.session.query(WebhookEndpoint).filter_by(institution_id=admin.institution.id).one()
        assert endpoint.url == f"{dev_receiver}/hooks/{admin.institution.id}"

    assert admin.post("/webhooks/ping", htmx=True).status_code == 200
    run_worker(app)
    received = [delivery for delivery in requests.get(f"{dev_receiver}/deliveries", timeout=5).json()["deliveries"]
                if delivery["institution_id"] == admin.institution.id]
    assert len(received) == 1
    [delivery] = received
    assert delivery["event_type"] == "webhook.test" and delivery["signature_verified"] is True
    assert json.loads(delivery["body"])["type"] == "webhook.test"
    assert "delivered" in _text(admin.get("/webhooks/deliveries/table", htmx=True))
    shown = requests.get(f"{dev_receiver}/", timeout=5).text
    assert "Development webhook receiver" in shown and '<td class="ok">yes</td>' in shown


def test_the_receiver_tells_a_forged_signature(admin, dev_receiver):
    assert admin.post("/webhooks/dev-receiver", htmx=True).status_code == 200
    forged = requests.post(f"{dev_receiver}/hooks/{admin.institution.id}", data=b'{"type": "decision.sent"}',
                           headers={"X-Karibu-Timestamp": "1764162300", "X-Karibu-Signature": "v1=" + "0" * 64,
                                    "X-Karibu-Event-Type": "decision.sent"}, timeout=5)
    assert forged.status_code == 200 and forged.json()["signature_verified"] is False
    unknown = requests.post(f"{dev_receiver}/hooks/ins_nobody", data=b"{}", timeout=5).json()
    assert unknown["signature_verified"] is False
    shown = requests.get(f"{dev_receiver}/", timeout=5).text
    assert "no: X-Karibu-Signature does not match the endpoint&#39;s secret" in shown
    assert "no: this institution has no webhook endpoint" in shown


def test_the_demo_setting_admits_the_receivers_origin_only(admin, dev_receiver):
    port = dev_receiver.rsplit(":", 1)[1]
    for url, reason in [(f"http://127.0.0.1:{free_port()}/hooks/x", "the URL must use https"),
                        (f"https://127.0.0.1:{port}/hooks/x", "127.0.0.1 is a loopback address"),
                        ("http://10.0.0.5/hooks", "the URL must use https"),
                        ("https://10.0.0.5/hooks", "10.0.0.5 is a private address")]:
        refused = admin.post("/webhooks", {"url": url, "events": ["decision.sent"]}, htmx=True)
        assert refused.status_code == 422 and reason in _text(refused), url
    typed = admin.post("/webhooks", {"url": f"{dev_receiver}/hooks/{admin.institution.id}",
                                     "events": ["decision.sent"]}, htmx=True)
    assert typed.status_code == 200 and "development receiver</span>" in _text(typed)


@pytest.mark.parametrize("url", ["http://10.0.0.5:8766", "https://hooks.example.com", "http://localhost:8766",
                                 "http://127.0.0.1:8766/?token=x"])
def test_a_dev_receiver_url_off_loopback_stops_the_app(database_url, tmp_path, url):
    with pytest.raises(ConfigurationError, match="^WEBHOOK_DEV_RECEIVER_URL must be an http URL on a loopback"):
        create_app({**app_config(database_url, tmp_path / "documents"), "WEBHOOK_DEV_RECEIVER_URL": url})
