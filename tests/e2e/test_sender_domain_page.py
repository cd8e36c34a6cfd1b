"""The Sending domain part of /settings in Chromium: an admin adds a domain, copies a record with its button, and
the page with a domain's records passes axe-core."""
from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import screenshot, sign_in


def test_an_admin_adds_a_domain_and_copies_its_records(page, factory):
    institution = factory.institution("University of Rwanda")
    admin = factory.user(institution, role="admin")
    sign_in(page, admin.email)
    page.goto("/settings#sending-domain-title", wait_until="load")
    page.get_by_role("textbox", name="Domain").fill("ur.ac.rw")
    page.get_by_role("button", name="Add sending domain").click()
    page.wait_for_url("**/settings#sending-domain-title")
    expect(page.get_by_role("heading", name="ur.ac.rw Not proven yet")).to_be_visible()
    expect(page.locator("#record-1-1-name")).to_have_text("_karibu.ur.ac.rw")
    copy = page.locator("[data-copy=record-1-2-value]")
    copy.click()
    expect(copy).not_to_have_text("Copy value")  # "Copied" (or the hand-copy hint without a clipboard)
    screenshot(page, "settings-sending-domain")
    assert_accessible(page, "/settings with a sending domain")
