"""The audit log in Chromium: each entry's technical detail is folded under a disclosure that opens by mouse and
by keyboard, a filter narrows the list in place, and the page stays accessible with a disclosure open."""
from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import sign_in


def test_the_technical_detail_opens_and_closes_under_its_disclosure(page, factory):
    institution = factory.institution("University of Rwanda")
    admin = factory.user(institution, role="admin", email="registrar@ur.ac.rw")
    application = factory.application(institution, first_name="Aline", last_name="Mukamana")
    sign_in(page, admin.email)
    page.goto(f"/applicants/{application.id}")
    page.goto("/audit")

    row = page.locator("tbody tr", has_text="Opened an applicant’s file")
    expect(row.get_by_role("link", name="Aline Mukamana")).to_have_attribute("href", f"/applicants/{application.id}")
    path = row.get_by_text(f"GET /applicants/{application.id}")
    expect(path).to_be_hidden()
    summary = row.locator("summary")
    summary.click()
    expect(path).to_be_visible()
    expect(row.locator("details")).to_have_attribute("open", "")
    assert_accessible(page, "audit log with an entry's detail open")
    summary.press("Enter")
    expect(path).to_be_hidden()
    summary.press("Enter")
    expect(path).to_be_visible()

    page.get_by_label("Action").select_option(label="Signed in")
    expect(page.locator("tbody tr", has_text="Opened an applicant’s file")).to_have_count(0)
    expect(page.locator("tbody tr", has_text="Signed in").first).to_be_visible()
    page.wait_for_url("**/audit?action=login")
