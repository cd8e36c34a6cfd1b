"""End-to-end fixtures: the app served on loopback in a thread, Debian's Chromium driven by Playwright.

Every page a test opens is watched for console errors and uncaught exceptions; any of them fails the test.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from portal.limiter import limiter
from tests.live_server import base_url, serving

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# Ignored by git: tests never rewrite tracked files. `bash scripts/screenshots.sh` copies them into docs/.
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
PASSWORD = "correct-horse-1"


@pytest.fixture(scope="session")
def live_server(app):
    with serving(app) as server:
        yield base_url(server)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def _fresh_login_counters(app):
    with app.app_context():
        limiter.reset()


@pytest.fixture
def page_errors():
    return []


@pytest.fixture
def new_page(browser, live_server, page_errors):
    """Pages of one browser context (shared cookies); console errors are collected and fail the test."""
    context = browser.new_context(base_url=live_server, accept_downloads=True,
                                  viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)

    def make(viewport: dict | None = None):
        page = context.new_page()
        if viewport:
            page.set_viewport_size(viewport)
        page.on("console", lambda message: page_errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: page_errors.append(str(error)))
        return page

    yield make
    context.close()
    assert page_errors == [], f"the browser reported errors: {page_errors}"


@pytest.fixture
def page(new_page):
    return new_page()


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def follow_link(page, name: str) -> None:
    """Click the link named `name` and wait until the page it opens has fully loaded.

    Playwright's click returns as soon as the navigation has started. The new page's deferred scripts
    (htmx, portal.js) run later, just before the load event; a form used before then is not yet bound
    by htmx and goes out as a plain form post, whose answer is a whole page (and a reload of it posts the
    form again). So a test that goes on to use the page waits for the load event of its address first.
    """
    link = page.get_by_role("link", name=name, exact=True)
    href = link.get_attribute("href")
    link.click()
    page.wait_for_url(f"**{href}", wait_until="load")


def sign_in(page, email: str, password: str = PASSWORD) -> None:
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/dashboard")
