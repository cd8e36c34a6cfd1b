"""The application form's address in Chromium (issue #41): on Cycles with its QR code drawn and a copy button,
and the address opens the form."""
from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.conftest import follow_link, sign_in


def test_staff_find_copy_and_open_the_apply_link(page, factory, app, live_server, monkeypatch):
    monkeypatch.setitem(app.config, "PUBLIC_BASE_URL", live_server)
    institution = factory.institution("Kenyatta University")
    staff = factory.user(institution, role="staff")
    sign_in(page, staff.email)
    follow_link(page, "Cycles")
    panel = page.locator("#apply-link")
    link = f"{live_server}/apply/{institution.id}"
    expect(panel.get_by_role("link", name=link)).to_have_attribute("href", link)
    qr = panel.get_by_role("img", name=f"QR code of {link}")
    expect(qr).to_be_visible()
    assert qr.evaluate("image => image.complete && image.naturalWidth > 0"), "the SVG is drawn"
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    panel.get_by_role("button", name="Copy link").click()
    expect(panel.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == link
    download = panel.get_by_role("link", name="Download the QR code (SVG, for print)")
    with page.expect_download() as saved:
        download.click()
    assert saved.value.suggested_filename == f"apply-{institution.id}-qr.svg"
    page.goto(link)
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(page.locator(".band-name")).to_have_text("Kenyatta University")
