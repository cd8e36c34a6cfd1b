"""The webhook page and the try page in Chromium: the page updates itself after the first save, the log refresh
leaves typed input alone and waits while a field has focus, focus goes to the field at fault after a failed
save, disable and remove ask first, and a keyboard-only /try lookup ends on the result heading."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import follow_link, sign_in
from tests.e2e.test_portal_flow import seed_institution
from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver, run_worker  # noqa: F401 (fixtures)



def _open_webhooks(page, factory):
    _, admin, _ = seed_institution(factory, applications=1)
    sign_in(page, admin.email)
    follow_link(page, "Webhooks")


def _save(page, url: str) -> None:
    page.get_by_label("Endpoint URL").fill(url)
    page.get_by_role("button", name=re.compile("Save")).click()


def test_the_first_save_shows_the_deliveries_panel_without_a_reload(page, factory, delivering):
    _open_webhooks(page, factory)
    expect(page.get_by_role("button", name="Send test ping")).to_have_count(0)
    page.evaluate("window.loadedOnce = true")
    _save(page, delivering.url(RECEIVER_HOST))
    expect(page.locator("#signing-secret")).to_have_text(re.compile(r"^whsec_"))
    expect(page.get_by_role("heading", name="Your signing secret: copy it now")).to_be_focused()
    expect(page.get_by_role("heading", name="Deliveries")).to_be_visible()
    page.get_by_role("button", name="Send test ping").click()
    expect(page.locator("#log-table tbody tr").first).to_contain_text("webhook.test")
    assert page.evaluate("window.loadedOnce") is True, "no reload happened"


def test_the_refresh_keeps_typed_input_and_waits_while_a_field_has_focus(page, factory, app, delivering):
    _open_webhooks(page, factory)
    _save(page, delivering.url(RECEIVER_HOST))
    page.get_by_role("button", name="Send test ping").click()
    first_row = page.locator("#log-table tbody tr").first
    expect(first_row).to_contain_text("pending")

    since = page.get_by_label(re.compile(r"^Recover failed deliveries since \(time in [A-Za-z_/]+\)$"))
    since.fill("2026-11-20T08:00")
    since.focus()
    run_worker(app)
    assert delivering.server.wait_for(1)
    page.wait_for_timeout(4500)  # two refresh periods
    expect(first_row).to_contain_text("pending")  # paused: the field still has focus
    expect(since).to_have_value("2026-11-20T08:00")

    page.get_by_role("heading", name="Deliveries").click()  # focus leaves the field
    expect(first_row).to_contain_text("delivered", timeout=10_000)
    expect(since).to_have_value("2026-11-20T08:00")
    expect(page.locator("#log-announcer")).to_have_text("1 delivery shown: 1 delivered.")
    expect(page.locator("#log-table")).not_to_have_attribute("hx-trigger", "every 2s")


def test_a_failed_save_puts_focus_on_the_field_at_fault(page, factory, resolver, page_errors):  # noqa: F811
    _open_webhooks(page, factory)
    _save(page, "http://hooks.example.test/x")
    field = page.get_by_label("Endpoint URL")
    expect(page.locator("#webhook-url-error")).to_contain_text("This endpoint URL is not allowed")
    expect(field).to_be_focused()
    expect(field).to_have_attribute("aria-invalid", "true")

    page.get_by_label("Endpoint URL").fill("https://public.example.test/hooks")
    for box in page.get_by_role("checkbox", name=re.compile(r"\.")).all():
        box.uncheck()
    page.get_by_role("button", name=re.compile("Save")).click()
    expect(page.locator("#webhook-events-error")).to_have_text("Choose at least one event type.")
    expect(page.get_by_role("checkbox", name=re.compile("application.submitted"))).to_be_focused()
    # Chromium logs every 4xx answer as a console error; these two 422s are the refused saves themselves.
    expected = "the server responded with a status of 422"
    assert sum(expected in error for error in page_errors) == 2
    page_errors[:] = [error for error in page_errors if expected not in error]


def test_disable_and_remove_ask_first(page, factory, delivering):
    _open_webhooks(page, factory)
    _save(page, delivering.url(RECEIVER_HOST))
    expect(page.get_by_role("button", name="Send test ping")).to_be_visible()

    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Disable the endpoint").click()
    expect(page.locator("#disabled-banner")).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Disable the endpoint").click()
    expect(page.locator("#disabled-banner")).to_contain_text("An admin disabled it")
    expect(page.get_by_role("status").filter(has_text="The endpoint is disabled")).to_be_focused()
    page.get_by_role("button", name="Re-enable the endpoint").click()
    expect(page.locator("#disabled-banner")).to_have_count(0)

    messages = []
    page.once("dialog", lambda dialog: (messages.append(dialog.message), dialog.dismiss()))
    page.get_by_role("button", name="Remove the endpoint").click()
    expect(page.get_by_role("button", name="Send test ping")).to_be_visible()
    assert "whole delivery log" in messages[0]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove the endpoint").click()
    expect(page.get_by_role("status").filter(has_text="were removed")).to_be_visible()
    expect(page.get_by_role("button", name="Send test ping")).to_have_count(0)
    expect(page.get_by_role("button", name="Save and create the signing secret")).to_be_visible()


def test_keyboard_only_try_lookup_ends_on_the_result_heading(page):
    page.goto("/try")
    page.wait_for_load_state("load")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("!!document.activeElement.closest('.demo-list')"):
            break
    else:
        pytest.fail("no demo candidate could be reached with Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#verify-button")).to_be_focused()
    expect(page.locator("#verification-status")).to_contain_text("filled in")
    page.keyboard.press("Enter")
    heading = page.locator("#result-heading")
    expect(heading).to_be_focused()
    expect(heading).to_have_text(re.compile(r"^Result: Authentic"))
    expect(page.locator("#verification-status")).to_have_text(re.compile(r"^Result: Authentic"))
