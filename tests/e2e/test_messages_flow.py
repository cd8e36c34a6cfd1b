"""Messages in Chromium: a decision sent from the file, its email refused then resent from the timeline, the
admin Messages page with its filters and message view, and staff recording an answer given by phone."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from core.models import utcnow
from tests.e2e.conftest import screenshot, sign_in
from tests.messages.conftest import drain_now
from tests.messages.smtp_server import SmtpServer


@pytest.fixture
def smtp(app, monkeypatch):
    server = SmtpServer().start()
    monkeypatch.setitem(app.config, "MAIL_SERVER", "127.0.0.1")
    monkeypatch.setitem(app.config, "MAIL_PORT", server.port)
    yield server
    server.stop()


def _institution_with_applicant(factory, decision="accepted"):
    institution = factory.institution("Kenyatta University")
    admin = factory.user(institution, role="admin", email="registrar@ku.ac.ke")
    program = factory.program(institution, name="BEd Arts")
    cycle = factory.cycle(institution, programs=[program], name="September 2026",
                          opens_at=utcnow() - timedelta(days=10), closes_at=utcnow() + timedelta(days=20))
    factory.stages(institution)
    application = factory.application(institution, program=program, cycle=cycle, first_name="Wanjiru",
                                      last_name="Kamau", email="wanjiru@example.co.ke", decision=decision)
    return institution, admin, application


def _send_decision_from_the_file(page, application):
    page.goto(f"/applicants/{application.id}")
    page.get_by_role("button", name=re.compile("^Send decision .* to the applicant…$")).click()
    page.get_by_role("button", name=re.compile(r"^Send decision “\w+”$")).click()
    expect(page.locator("#decisions")).to_contain_text(re.compile(r"The decision “\w+” was sent to the applicant\."))


def test_a_refused_email_is_resent_from_the_timeline_and_listed_on_the_messages_page(page, app, factory, smtp):
    institution, admin, application = _institution_with_applicant(factory)
    sign_in(page, admin.email)
    _send_decision_from_the_file(page, application)
    smtp.recorder.rcpt_answers = ["550 5.1.1 <wanjiru@example.co.ke>: mailbox unavailable"]
    drain_now(app)

    page.reload()
    entry = page.locator("#timeline li.timeline-message")
    expect(entry).to_contain_text("Email to wanjiru@example.co.ke")
    expect(entry).to_contain_text("failed")
    expect(entry).to_contain_text("550 5.1.1 <wanjiru@example.co.ke>: mailbox unavailable")
    screenshot(page, "applicant-message-failed")
    entry.get_by_role("button", name=re.compile("Resend")).click()
    expect(page.locator("#timeline")).to_contain_text("is queued again")
    expect(page.locator("#timeline li.timeline-message")).to_contain_text("queued")
    drain_now(app)
    assert [r.recipients for r in smtp.received] == [["wanjiru@example.co.ke"]]
    page.reload()
    expect(page.locator("#timeline li.timeline-message")).to_contain_text("sent")

    page.get_by_role("link", name="Messages").click()
    expect(page.get_by_role("heading", name="Messages", exact=True)).to_be_visible()
    rows = page.locator("#message-list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("wanjiru@example.co.ke")
    page.get_by_label("Status").select_option("failed")
    expect(page.locator("#message-list")).to_contain_text("No messages matching these filters")
    expect(page).to_have_url(re.compile(r"status=failed"))
    page.get_by_label("Status").select_option("sent")
    page.get_by_label("Channel").select_option("email")
    expect(rows).to_have_count(1)
    screenshot(page, "messages")
    rows.first.get_by_role("link", name=re.compile("View")).click()
    expect(page.locator("pre.message-text")).to_contain_text("Dear Wanjiru,")
    expect(page.locator("pre.message-text")).to_contain_text("(personal link, hidden)")
    expect(page.locator(".kv")).to_contain_text("250 2.0.0 Ok: queued as Q1")
    screenshot(page, "message-detail")


def test_staff_record_an_answer_given_by_phone(page, app, factory, smtp):
    institution, admin, application = _institution_with_applicant(factory, decision="waitlisted")
    sign_in(page, admin.email)
    _send_decision_from_the_file(page, application)
    decisions = page.locator("#decisions")
    answer = decisions.get_by_label("Answer given by phone or in person")
    expect(answer).to_have_value("")  # nothing preselected
    answer.select_option("accepted")
    decisions.get_by_role("button", name="Record answer…").click()
    dialog = decisions.get_by_role("alertdialog")
    expect(dialog).to_contain_text("Record that")
    expect(dialog).to_contain_text("accepted the decision “Waitlisted”?")
    expect(decisions.locator("tbody tr").last).not_to_contain_text("Accepted the offer")
    dialog.get_by_role("button", name="Record: accepted").click()
    expect(decisions).to_contain_text("Recorded: the applicant accepted the decision.")
    expect(decisions.locator("tbody tr").last).to_contain_text("Accepted the offer")
    expect(decisions.get_by_role("button", name="Record answer…")).to_have_count(0)
    page.reload()
    expect(page.locator("#timeline")).to_contain_text(re.compile(r"Applicant answered the decision\s*: accepted"))
