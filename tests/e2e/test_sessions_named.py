"""The account page in Chromium: each signed-in browser named by browser and system, and each End button's
accessible name (as the browser computes it for a screen reader) naming its session, the current one marked."""
from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import sign_in

CHROME_WINDOWS = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                  "Chrome/131.0.0.0 Safari/537.36")


def test_end_buttons_are_named_after_their_sessions(browser, live_server, page, factory):
    user = factory.user(factory.institution(), email="two-browsers@example.ac.rw")
    other = browser.new_context(base_url=live_server, user_agent=CHROME_WINDOWS)
    try:
        sign_in(other.new_page(), user.email)
        sign_in(page, user.email)  # Debian's headless Chromium on Linux
        page.goto("/account")
        sessions = page.locator("#sessions")
        expect(sessions.get_by_role("button", name=re.compile(
            r"^End session: Chrome on Windows, last active \d{1,2} \w{3} \d{4}, \d{2}:\d{2}$"))).to_be_visible()
        expect(sessions.get_by_role("button", name=re.compile(
            r"^End session: Headless Chrome on Linux \(this browser\), last active "))).to_be_visible()
        names = [button.get_attribute("aria-label") for button in sessions.get_by_role("button", name="End").all()]
        assert len(names) == 2 and len(set(names)) == 2
        expect(sessions.locator("tr", has_text="Headless Chrome on Linux")).to_contain_text("this browser")
        assert_accessible(page, "/account with two sessions")

        sessions.get_by_role("button", name=re.compile(r"^End session: Chrome on Windows,")).click()
        expect(page.get_by_text("That session is signed out.")).to_be_visible()
        expect(page.locator("#sessions").get_by_role("button", name=re.compile("^End session"))).to_have_count(1)
    finally:
        other.close()
