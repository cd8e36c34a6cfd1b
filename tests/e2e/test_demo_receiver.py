"""The demo's webhooks in Chromium: with WEBHOOK_DEV_RECEIVER_URL set (as scripts/run.sh does) a newcomer picks
the development receiver with one click, sends a test ping and sees it on the receiver's page, signature
verified."""
from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from core.scoping import InstitutionScope
from core.webhooks.endpoints import get_endpoint, signing_secret
from devtools.webhook_receiver import create_server
from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import follow_link, sign_in
from tests.e2e.test_portal_flow import seed_institution
from tests.webhooks.conftest import run_worker


@pytest.fixture
def dev_receiver(app, redis_client, monkeypatch):
    """The development receiver in this process, its secrets read from the test database; yields its URL."""
    def secret_for(institution_id: str) -> str | None:
        with app.app_context():
            endpoint = get_endpoint(InstitutionScope(institution_id))
            return signing_secret(endpoint) if endpoint is not None else None

    server, _ = create_server("127.0.0.1", 0, secret_for)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setitem(app.config, "WEBHOOK_DEV_RECEIVER_URL", url)
    redis_client.flushdb()
    yield url
    redis_client.flushdb()
    server.shutdown()
    server.server_close()


def test_a_newcomer_sees_a_signed_delivery_on_the_development_receiver(page, factory, app, dev_receiver):
    _, admin, _ = seed_institution(factory, applications=1)
    sign_in(page, admin.email)
    follow_link(page, "Webhooks")
    panel = page.locator("#dev-receiver")
    expect(panel.get_by_role("heading", name="Development receiver demo only")).to_be_visible()
    assert_accessible(page, "/webhooks with the development receiver")

    panel.get_by_role("button", name="Use the development receiver").click()
    expect(page.locator("#signing-secret")).to_contain_text("whsec_")
    expect(page.get_by_role("heading", name="Endpoint development receiver")).to_be_visible()
    expect(page.locator("text=go to the development receiver")).to_have_count(1)
    page.get_by_role("button", name="Send test ping").click()
    expect(page.locator("#log-table tbody tr").first).to_contain_text("webhook.test")
    event_id = page.locator("#log-table tbody tr").first.locator("[data-event-id] code").inner_text()
    assert event_id.startswith("evt_")
    expect(page.locator("#log-table tbody tr").first.locator("[data-event-id]")).to_contain_text("delivery whd_")
    run_worker(app)

    page.goto(f"{dev_receiver}/")
    row = page.get_by_role("row").filter(has_text="webhook.test")
    expect(row).to_have_count(1)
    expect(row.get_by_role("cell", name="yes", exact=True)).to_be_visible()
    expect(row.get_by_role("cell", name=event_id, exact=True)).to_be_visible()  # one id on both sides
