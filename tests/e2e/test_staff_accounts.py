"""Staff accounts in Chromium: an admin invites a colleague, who sets their own password from the emailed link
and signs in; a forgotten password is reset through the emailed link. The emails go through the real outbox
to a real SMTP server."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, sign_in
from tests.messages.conftest import drain_now
from tests.messages.smtp_server import SmtpServer

LINK = re.compile(r"https?://\S+/account/(?:invitation|reset)/[A-Za-z0-9]+")


@pytest.fixture
def smtp(app, monkeypatch):
    server = SmtpServer().start()
    monkeypatch.setitem(app.config, "MAIL_SERVER", "127.0.0.1")
    monkeypatch.setitem(app.config, "MAIL_PORT", server.port)
    yield server
    server.stop()


def _emailed_link(app, smtp, address: str) -> str:
    drain_now(app)
    [received] = [item for item in smtp.received if address in item.recipients]
    text = received.message.get_body(("plain",)).get_content()
    return urlsplit(LINK.search(text).group()).path


def _expect_refusal_logged(page_errors: list[str], status: int) -> None:
    """A refused form or a dead link is a full page with a 4xx status, which Chromium logs as a console error:
    that one is expected here (and must be there); any other error still fails the test."""
    expected = [error for error in page_errors if f"status of {status}" in error]
    assert expected, page_errors
    page_errors.remove(expected[0])


def _choose_password(page, password: str) -> None:
    page.get_by_label("New password", exact=True).fill(password)
    page.get_by_label("New password again").fill(password)


def test_an_invited_colleague_sets_their_own_password_and_signs_in(page, page_errors, app, factory, smtp):
    institution = factory.institution("University of Rwanda")
    admin = factory.user(institution, role="admin", email="registrar@ur.ac.rw")
    sign_in(page, admin.email)
    page.goto("/users")
    page.get_by_label("Email").fill("Aline@UR.ac.rw")
    page.get_by_label("Role").select_option("staff")
    page.get_by_role("button", name="Send invitation").click()
    expect(page.locator("#invitation-sent")).to_contain_text("aline@ur.ac.rw")
    expect(page.locator("#invitation-table")).to_contain_text("aline@ur.ac.rw")
    expect(page.locator("body")).not_to_contain_text("temporary password")
    screenshot(page, "users-invitation")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/login")

    page.goto(_emailed_link(app, smtp, "aline@ur.ac.rw"))
    expect(page.get_by_role("heading", name="Welcome to Karibu")).to_be_visible()
    expect(page.locator("main")).to_contain_text("University of Rwanda")
    _choose_password(page, "short")
    page.get_by_role("button", name="Activate my account").click()
    expect(page.locator("main")).to_contain_text("at least 12 characters")
    _expect_refusal_logged(page_errors, 422)
    _choose_password(page, "akagera-savanna-2031")
    page.get_by_role("button", name="Activate my account").click()
    page.wait_for_url("**/login")
    expect(page.locator(".messages")).to_contain_text("Your account is ready")

    sign_in(page, "aline@ur.ac.rw", "akagera-savanna-2031")
    page.get_by_role("link", name="Your account").click()
    page.wait_for_url("**/account")
    expect(page.locator("#account-email")).to_have_text("aline@ur.ac.rw")
    expect(page.locator("#sessions")).to_contain_text("this browser")
    screenshot(page, "account")


def test_a_forgotten_password_is_reset_through_the_emailed_link(page, page_errors, app, factory, smtp):
    user = factory.user(factory.institution("Kyambogo University"), email="okello@kyu.ac.ug")
    page.goto("/login")
    page.get_by_role("link", name="Forgot your password?").click()
    page.wait_for_url("**/login/forgot")
    page.get_by_label("Email").fill(user.email)
    page.get_by_role("button", name="Send the link").click()
    expect(page.locator("#forgot-sent")).to_contain_text("okello@kyu.ac.ug")

    link = _emailed_link(app, smtp, user.email)
    page.goto(link)
    expect(page.locator("main")).to_contain_text("Kyambogo University")
    _choose_password(page, "nile-source-jinja-88")
    page.get_by_role("button", name="Save the new password").click()
    page.wait_for_url("**/login")
    expect(page.locator(".messages")).to_contain_text("Your new password is set")
    sign_in(page, user.email, "nile-source-jinja-88")

    page.goto(link)  # used once already
    expect(page.get_by_role("heading", name="This link cannot be used")).to_be_visible()
    _expect_refusal_logged(page_errors, 410)
