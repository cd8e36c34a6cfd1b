"""Two-factor sign-in in a real browser: enrol from the account page, then sign in with a code."""
from __future__ import annotations

import time

import pyotp
from playwright.sync_api import expect

from tests.e2e.conftest import PASSWORD, follow_link, screenshot, sign_in


def test_enrol_sign_out_and_sign_in_with_a_code(page, factory):
    institution = factory.institution("Kigali Institute of Health")
    user = factory.user(institution, role="staff", email="admissions@kih.ac.rw")
    sign_in(page, user.email)

    page.goto("/account/two-factor")
    expect(page.locator("#two-factor")).to_contain_text("Off")
    follow_link(page, "Set up two-factor sign-in")
    qr_code = page.get_by_role("img", name="QR code of your two-factor key")
    expect(qr_code).to_be_visible()
    assert qr_code.evaluate("image => image.complete && image.naturalWidth > 100")  # drawn, not blocked by the CSP
    secret = page.locator("#two-factor-secret").inner_text().replace(" ", "")
    screenshot(page, "two-factor-enrol")
    page.get_by_label("Code", exact=True).fill(pyotp.TOTP(secret).now())
    page.get_by_role("button", name="Switch on").click()

    expect(page.get_by_role("heading", name="Your recovery codes")).to_be_visible()
    expect(page.locator("#recovery-codes li")).to_have_count(10)
    screenshot(page, "two-factor-recovery-codes")
    follow_link(page, "I have saved them: continue")
    expect(page.locator("#two-factor")).to_contain_text("On")
    screenshot(page, "two-factor-account")

    page.get_by_role("button", name="Sign out", exact=True).click()
    page.wait_for_url("**/login")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/login/two-factor")
    page.goto("/dashboard")  # nothing opens before the code
    page.wait_for_url("**/login?next=/dashboard")
    page.goto("/login/two-factor")
    # The code of the next 30-second step: the enrolment's own code is never accepted twice.
    page.get_by_label("Code", exact=True).fill(pyotp.TOTP(secret).at(time.time() + 30))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/dashboard")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
