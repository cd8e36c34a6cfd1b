"""Staff in a real browser: sign in, dashboard, filter and search applicants, load more, back button."""
from __future__ import annotations

import re
from datetime import timedelta

from playwright.sync_api import expect

from core.models import utcnow
from tests.e2e.conftest import follow_link, screenshot, sign_in

FIRST_NAMES = ["Aimée", "Jean", "Grace", "Eric", "Divine", "Patrick", "Solange", "Innocent", "Claudine", "Yves"]
LAST_NAMES = ["Uwase", "Habimana", "Mukamana", "Niyonzima", "Ishimwe", "Nkurunziza"]


def seed_institution(factory, applications: int = 60):
    institution = factory.institution("Kigali Institute of Health")
    admin = factory.user(institution, role="admin", email="registrar@kih.ac.rw")
    nursing = factory.program(institution, name="BSc Nursing")
    midwifery = factory.program(institution, name="BSc Midwifery")
    now = utcnow()
    cycle = factory.cycle(institution, programs=[nursing, midwifery], name="2026 Intake",
                          opens_at=now - timedelta(days=21), closes_at=now + timedelta(days=40))
    stages = factory.stages(institution)
    created = []
    for index in range(applications):
        created.append(factory.application(
            institution, program=nursing if index % 3 else midwifery, cycle=cycle,
            first_name=FIRST_NAMES[index % len(FIRST_NAMES)], last_name=LAST_NAMES[index % len(LAST_NAMES)],
            stage=stages[index % 3], paid=index % 2 == 0, decision="accepted" if index % 7 == 0 else "none",
            submitted_at=now - timedelta(days=20) + timedelta(hours=index * 7)))
    return institution, admin, created


def test_staff_find_applicants_by_filter_and_search(page, factory):
    institution, admin, _ = seed_institution(factory)
    sign_in(page, admin.email)
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page.locator("svg.chart rect.bar").first).to_be_attached()
    screenshot(page, "dashboard")

    follow_link(page, "Applicants")
    rows = page.locator("#applicant-rows tr:not(.load-more)")
    expect(rows).to_have_count(50)
    page.get_by_role("link", name="Load more").click()
    expect(rows).to_have_count(60)
    expect(page.get_by_role("link", name="Load more")).to_have_count(0)

    page.get_by_label("Program", exact=True).select_option(label="BSc Midwifery")
    expect(rows).to_have_count(20)
    expect(page).to_have_url(re.compile(r"/applicants\?program=prg_"))
    page.get_by_label("Paid", exact=True).select_option(label="Paid")
    expect(rows).to_have_count(10)
    screenshot(page, "applicants")

    page.get_by_label("Search by name, email or application id").fill("aimee uwa")
    expect(rows.first).to_contain_text("Aimée Uwase")
    expect(page).to_have_url(re.compile(r"q=aimee\+uwa"))
    for name in rows.locator("td:nth-child(2) a").all_inner_texts():
        assert name == "Aimée Uwase"

    shared_url = page.url  # a shareable link: opened afresh, it shows the same filtered table
    other = page.context.new_page()
    other.goto(shared_url)
    expect(other.get_by_label("Search by name, email or application id")).to_have_value("aimee uwa")
    expect(other.locator("#applicant-rows tr:not(.load-more)")).to_have_count(rows.count())
    other.close()

    page.go_back()
    expect(page).not_to_have_url(re.compile(r"q=aimee"))
    expect(page.get_by_label("Search by name, email or application id")).to_have_value("")
    expect(rows).to_have_count(10)

    rows.first.locator("td:nth-child(2) a").click()
    expect(page.get_by_role("heading", name="Personal data")).to_be_visible()
    screenshot(page, "applicant-detail")

    follow_link(page, "Cycles")
    expect(page.get_by_role("heading", name=re.compile("2026 Intake"))).to_be_visible()
    screenshot(page, "cycles")


def test_api_key_is_shown_once_with_a_copy_button(page, factory):
    _, admin, _ = seed_institution(factory, applications=1)
    sign_in(page, admin.email)
    follow_link(page, "API keys")
    page.get_by_label("Key name").fill("Admissions CRM sync")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key")
    expect(key).to_have_text(re.compile(r"^sk_live_[A-Za-z0-9]{38}$"))
    expect(page.locator("#key-table")).to_contain_text("Admissions CRM sync")
    expect(page.get_by_label("Key name")).to_have_value("")
    screenshot(page, "api-keys")
    raw = key.inner_text()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy").click()
    page.wait_for_function("async (raw) => (await navigator.clipboard.readText()) === raw", arg=raw)
    page.reload()
    assert raw not in page.content()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=re.compile("Revoke")).click()
    expect(page.locator("#key-table")).to_contain_text("Revoked")


def test_phone_width_layout(new_page, factory):
    institution, admin, _ = seed_institution(factory, applications=12)
    page = new_page(viewport={"width": 390, "height": 844})
    sign_in(page, admin.email)
    page.goto("/applicants")
    expect(page.locator("#applicant-rows tr")).to_have_count(12)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways at phone width ({width}px)"
    screenshot(page, "applicants-phone")
