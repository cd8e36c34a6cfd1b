"""University sign-in in Chromium, end to end: the sign-in page sends the person to their university's OpenID
Connect provider (a real one on a local HTTPS port, trusted through SSO_CA_BUNDLE and, for the browser, by
ignoring its test certificate), which sends them back signed in; sign-out ends the session; a refusal is a page."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.accounts.sso_fixtures import (  # noqa: F401 (fixtures)
    _provider_as_configured, provider, sso_audit_rows, sso_trust, university,
)
from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import screenshot, sign_in


@pytest.fixture
def university_page(browser, live_server, app, provider, page_errors):
    """A page whose browser accepts the provider's test certificate, with Karibu's public address set to the
    live server so the redirect URI registered at the provider is its callback."""
    original = app.config["PUBLIC_BASE_URL"]
    app.config["PUBLIC_BASE_URL"] = live_server
    provider.allow_redirect_uri(live_server + "/login/sso/callback")
    context = browser.new_context(base_url=live_server, ignore_https_errors=True,
                                  viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.on("console", lambda message: page_errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    yield page
    context.close()
    app.config["PUBLIC_BASE_URL"] = original
    assert page_errors == [], f"the browser reported errors: {page_errors}"


def test_a_lecturer_signs_in_with_the_university_account_and_signs_out(app, factory, provider, university_page):
    page = university_page
    institution = university(app, factory, provider, "ur.ac.rw", name="University of Rwanda")
    factory.user(institution, email="amina.uwase@ur.ac.rw")

    page.goto("/login")
    expect(page.get_by_role("heading", name="Sign in with your university account")).to_be_visible()
    assert_accessible(page, "/login with university sign-in")
    page.get_by_label("Your university address").fill("amina.uwase@ur.ac.rw")
    page.get_by_role("button", name="Continue to your university").click()
    page.wait_for_url("**/dashboard")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    screenshot(page, "university-sign-in-dashboard")

    page.goto("/account")
    expect(page.locator("main")).to_contain_text("this browser")
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.wait_for_url("**/login")
    page.goto("/dashboard")
    page.wait_for_url("**/login?next=/dashboard")
    assert [row.action for row in sso_audit_rows(app, "auth.sso.signed_in")] == ["auth.sso.signed_in"]


def test_a_refusal_is_a_page_that_says_why(app, factory, provider, university_page, page_errors):
    page = university_page
    university(app, factory, provider, "ur.ac.rw", name="University of Rwanda")
    factory.user(factory.institution(), email="registrar@ur.ac.rw", role="admin")
    page.goto("/login")
    page.get_by_label("Your university address").fill("newcomer@ur.ac.rw")
    page.get_by_role("button", name="Continue to your university").click()
    page.wait_for_url("**/login/sso/callback?**")
    expect(page.get_by_role("heading", name="You are not signed in")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("You have no account at University of Rwanda yet")
    assert_accessible(page, "/login/sso/callback refused")
    screenshot(page, "university-sign-in-refused")
    assert [row.target for row in sso_audit_rows(app)] == ["no_account"]
    # The refusal page's own 403 is the browser's only complaint.
    assert page_errors == ["Failed to load resource: the server responded with a status of 403 (FORBIDDEN)"]
    page_errors.clear()


def test_an_admin_sets_it_up_on_the_settings_page(app, factory, provider, page):
    institution = factory.institution("University of Rwanda")
    admin = factory.user(institution, email="registrar@karibu-ops.org", role="admin")
    sign_in(page, admin.email)
    page.goto("/users")
    page.get_by_role("link", name="University sign-in settings").click()
    page.wait_for_url("**/settings/sso")
    page.get_by_label("Issuer").fill(provider.issuer)
    page.get_by_label("Client ID").fill("karibu-client")
    page.get_by_label("Client secret").fill(provider.client.client_secret)
    page.get_by_label("Email domains").fill("ur.ac.rw")
    page.get_by_label("Require the university account").check()
    page.get_by_role("button", name="Save university sign-in").click()
    page.wait_for_url("**/settings/sso")
    expect(page.get_by_text("University sign-in is saved.")).to_be_visible()
    expect(page.locator("main")).to_contain_text("registrar@karibu-ops.org")  # the break-glass admin
    assert provider.client.client_secret not in page.content()
    assert page.get_by_label("Client secret").input_value() == ""
    assert_accessible(page, "/settings/sso")
    screenshot(page, "university-sign-in-settings")
