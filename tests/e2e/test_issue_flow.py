"""The whole staff story in Chromium: bulk stage change, CSV export, the try page, webhook set-up and ping."""
from __future__ import annotations

import csv
import re

from playwright.sync_api import expect

from tests.e2e.conftest import follow_link, screenshot, sign_in
from tests.e2e.test_portal_flow import seed_institution
from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver, run_worker  # noqa: F401 (fixtures)


def test_bulk_stage_change_and_csv_export(page, factory):
    institution, admin, created = seed_institution(factory, applications=30)
    sign_in(page, admin.email)
    page.goto("/applicants")
    page.get_by_label("Stage", exact=True).select_option(label="Submitted")
    rows = page.locator("#applicant-rows tr")
    expect(rows).to_have_count(10)

    for index in range(3):
        rows.nth(index).get_by_role("checkbox").check()
    expect(page.locator('[data-selected-count="bulk"]')).to_have_text("3 applicants selected")
    page.get_by_label("Move to stage").select_option(label="Interview")
    page.get_by_role("button", name="Apply to selected").click()
    page.get_by_role("button", name="Move 3 applicants to “Interview”").click()
    expect(page.locator("#bulk-result")).to_contain_text("3 of 3 selected applications changed")
    expect(page.locator("tr.is-updated")).to_have_count(3)
    expect(page.locator("tr.is-updated").first).to_contain_text("Interview")
    screenshot(page, "applicants-bulk-change")

    page.get_by_label("Stage", exact=True).select_option(label="Interview")
    expect(rows).to_have_count(13)
    with page.expect_download() as download_info:
        page.locator("#export-link").click()
    download = download_info.value
    assert download.suggested_filename.startswith("applicants-") and download.suggested_filename.endswith(".csv")
    with open(download.path(), newline="", encoding="utf-8") as handle:
        exported = list(csv.DictReader(handle))
    assert len(exported) == 13
    assert {row["Stage"] for row in exported} == {"Interview"}, "the list's words"
    assert exported[0].keys() >= {"Applicant", "Application ID", "Stage", "Decision"}


def test_trial_verification_on_the_try_page(page):
    page.goto("/try")
    expect(page.get_by_role("heading", name="Verify an examination record")).to_be_visible()
    page.get_by_label("Registry").select_option("UNEB")
    expect(page.get_by_label("Index number")).to_be_visible()
    page.locator(".demo-list a").first.click()
    expect(page.get_by_label("Index number")).not_to_have_value("")
    page.get_by_role("button", name="Verify").click()
    card = page.locator("article.certificate")
    expect(card).to_be_visible()
    expect(card.locator(".verdict")).to_have_text(re.compile("authentic", re.IGNORECASE))
    expect(page.locator("#result-curl")).to_contain_text("Authorization: Bearer sk_trial_demo")
    expect(page.locator("#result-json")).to_contain_text('"issuer"')
    screenshot(page, "try")



def test_webhook_setup_secret_once_and_ping(page, factory, app, delivering):
    institution, admin, _ = seed_institution(factory, applications=3)
    sign_in(page, admin.email)
    follow_link(page, "Webhooks")
    page.get_by_label("Endpoint URL").fill(delivering.url(RECEIVER_HOST))
    page.get_by_label(re.compile("Include the applicant")).check()
    page.get_by_role("button", name=re.compile("Save")).click()
    secret = page.locator("#signing-secret")
    expect(secret).to_have_text(re.compile(r"^whsec_"))
    shown = secret.inner_text()
    screenshot(page, "webhooks-secret")

    page.reload()
    expect(page.locator("#signing-secret")).to_have_count(0)
    assert shown not in page.content()

    page.get_by_role("button", name="Send test ping").click()
    expect(page.locator("#log")).to_contain_text("Test ping queued")
    expect(page.locator("#log tbody tr").first).to_contain_text("pending")
    run_worker(app)
    received = delivering.server.wait_for(1)
    assert received[0].headers["X-Karibu-Event-Type"] == "webhook.test"
    expect(page.locator("#log tbody tr").first).to_contain_text("delivered", timeout=10_000)
    screenshot(page, "webhooks")

    page.locator("#log tbody tr").first.get_by_role("link", name=re.compile("Details")).click()
    expect(page.get_by_role("heading", name=re.compile("Attempt 1"))).to_contain_text("acknowledged")
