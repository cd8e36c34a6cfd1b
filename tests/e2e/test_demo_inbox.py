"""The demo's emails as a person reads them (issue #41), in Chromium: the app sends over SMTP to the development
mail sink (as scripts/run.sh sets it up), the Messages page points to the sink's inbox page, the inbox lists the
decision email newest first, and the link in it opens the applicant's answer page."""
from __future__ import annotations

import re
import threading

import pytest
from playwright.sync_api import expect

from devtools.mail_inbox import create_server
from devtools.mail_sink import start_sink
from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import sign_in
from tests.e2e.test_messages_flow import _institution_with_applicant, _send_decision_from_the_file
from tests.messages.conftest import drain_now
from tests.messages.smtp_server import free_port


@pytest.fixture
def demo_mail(app, live_server, monkeypatch, tmp_path):
    """The mail sink and its inbox page on free ports, and the app configured as scripts/run.sh does."""
    port = free_port()
    sink = start_sink("127.0.0.1", port, tmp_path / "mail")
    inbox = create_server("127.0.0.1", 0, tmp_path / "mail")
    thread = threading.Thread(target=inbox.serve_forever, daemon=True)
    thread.start()
    inbox_url = f"http://127.0.0.1:{inbox.server_port}"
    for name, value in (("MAIL_SERVER", "127.0.0.1"), ("MAIL_PORT", port), ("MAIL_USE_TLS", False),
                        ("MAIL_USE_SSL", False), ("MAIL_DEV_INBOX_URL", inbox_url),
                        ("PUBLIC_BASE_URL", live_server)):
        monkeypatch.setitem(app.config, name, value)
    yield inbox_url
    inbox.shutdown()
    inbox.server_close()
    sink.stop()


def test_the_inbox_shows_the_decision_email_and_its_link_opens_the_answer_page(page, app, factory, demo_mail):
    _, admin, application = _institution_with_applicant(factory, decision="accepted")
    sign_in(page, admin.email)
    _send_decision_from_the_file(page, application)
    drain_now(app)

    page.get_by_role("link", name="Messages").click()
    note = page.locator("#dev-inbox")
    expect(note).to_contain_text("Demo: every email sent is in the development inbox")
    expect(note.get_by_role("link", name=demo_mail)).to_have_attribute("href", demo_mail)
    page.locator("#message-list tbody tr").first.get_by_role("link", name=re.compile("View")).click()
    expect(page.locator("pre.message-text")).to_contain_text("(personal link, hidden)")
    expect(page.locator("#dev-inbox")).to_be_visible()

    page.goto(demo_mail)
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("wanjiru@example.co.ke")
    assert_accessible(page, "the development inbox")
    rows.first.get_by_role("link").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Kenyatta University")
    expect(page.locator("iframe[sandbox]")).to_have_attribute("sandbox", "allow-popups allow-popups-to-escape-sandbox")
    link = page.locator("pre.text a").filter(has_text="/decisions/respond/").first
    link.click()
    page.wait_for_url(re.compile(r"/decisions/respond/"), wait_until="load")
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(page.locator("body")).to_contain_text("Wanjiru")
