"""The API reference page: reached from the portal header, rendered by the vendored Swagger UI under the
portal's Content-Security-Policy, with no console error (a CSP violation is one)."""
from __future__ import annotations

import re

from playwright.sync_api import expect


def test_reference_page_renders_the_document_from_the_header_link(page):
    page.goto("/login")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API reference").click()
    page.wait_for_url("**/api/v1/docs")

    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Karibu Partner API")
    expect(page.get_by_role("heading", name="Events")).to_be_visible()
    events_operation = page.locator(".opblock-summary-path", has_text=re.compile(r"^/api/v1/events$"))
    expect(events_operation).to_be_visible()
    events_operation.click()
    expect(page.get_by_text("Poll the events feed").first).to_be_visible()
    expect(page.get_by_text("Webhooks", exact=True).first).to_be_visible()
    expect(page.get_by_text("decision.sent").first).to_be_visible()

    page.get_by_role("link", name="← Back to the Karibu portal").click()
    page.wait_for_url("**/login**")  # the portal, at its sign-in page for a visitor


def test_reference_page_sends_a_tight_policy(client):
    from portal.security import CONTENT_SECURITY_POLICY as PORTAL_POLICY

    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    policy = response.headers["Content-Security-Policy"]
    assert "unsafe" not in policy
    assert policy == PORTAL_POLICY.replace("connect-src 'self'", "connect-src 'self' http://127.0.0.1:8000")
