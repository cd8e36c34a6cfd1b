"""axe-core over every page of the portal, as admin, as staff and signed out: no serious or critical violation.
The admin's pages are checked in English and in French, at a 390 px phone and at 1366 px.

To check a new page, add its path to STAFF_PAGES, ADMIN_PAGES or PUBLIC_PAGES. A path may name the seeded
rows: {institution}, {application}, {message}, {delivery}, {decision_token}, {bulk_change} (see `seeded`).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from core.applications.decision_answers import decision_response_token
from core.db import db
from core.applications.history import Actor
from core.applications.matching_updates import start_bulk_change
from core.models import Decision, Message
from core.scoping import InstitutionScope
from core.applications.state_updates import apply_updates, parse_updates
from core.webhooks.endpoints import save_endpoint
from core.webhooks.log import send_test_ping
from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import sign_in
from tests.e2e.test_portal_flow import seed_institution

# Pages every signed-in member of staff reaches.
STAFF_PAGES = [
    "/dashboard",
    "/applicants",
    "/applicants/{application}",
    "/applicants/{application}/preview/email",
    "/applicants/bulk-changes/{bulk_change}",
    "/cycles",
    "/verification",
    "/verification/usage",
    "/audit",
    "/account",
    "/account/language",
    "/account/two-factor",
    "/try",
    "/applicants/app_missing",  # the 404 page, signed in
]
# Pages answered with an error status (Chromium logs the status as a console error, expected here).
ERROR_PAGES = {"/applicants/app_missing", "/no-such-page"}
# Pages only admins reach.
ADMIN_PAGES = [
    "/webhooks",
    "/webhooks/deliveries",
    "/webhooks/deliveries/{delivery}",
    "/messages",
    "/messages/{message}",
    "/api-keys",
    "/users",
    "/settings",
    "/applicants/{application}/privacy",
]
# The sizes every admin page is checked at: a phone (the menu folded behind its button) and a laptop.
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1366, "height": 768}}
# Pages for everyone, signed out.
PUBLIC_PAGES = [
    "/login",
    "/try",
    "/apply/{institution}",
    "/decisions/respond/{decision_token}",
    "/decisions/respond/{decision_token}/confirm?response=declined",
    "/no-such-page",  # the 404 page, signed out
]


@dataclass(frozen=True)
class Seeded:
    admin_email: str
    staff_email: str
    ids: dict


@pytest.fixture
def seeded(app, factory, monkeypatch) -> Seeded:
    """An institution with applicants, a sent decision (its message and answer link), a webhook delivery and a
    finished change of all matching applicants."""
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
    institution, admin, applications = seed_institution(factory, applications=12)
    staff = factory.user(institution, role="staff", email="officer@kih.ac.rw")
    application = applications[0]
    scope = InstitutionScope(institution.id)
    with app.app_context():
        apply_updates(scope, parse_updates({"updates": [{"id": application.id, "decision": "accepted",
                                                          "send_decision": True}]}),
                      actor=Actor.staff(admin.email), emit_application_updated=False)
        decision = db.session.scalars(select(Decision).where(Decision.application_id == application.id)).one()
        message = db.session.scalars(select(Message).where(Message.application_id == application.id)).first()
        save_endpoint(scope, "https://127.0.0.1:9/karibu")
        delivery = send_test_ping(scope)
        bulk = start_bulk_change(scope, admin.email, {"decision": "accepted"}, {"stage": applications[1].stage})
        ids = {"institution": institution.id, "application": application.id, "message": message.id,
               "delivery": delivery.id, "decision_token": decision_response_token(decision),
               "bulk_change": bulk.id}
    return Seeded(admin_email=admin.email, staff_email=staff.email, ids=ids)


def choose_language(page, language: str) -> None:
    """Save the signed-in member of staff's portal language on their language page."""
    page.goto("/account/language")
    form = page.locator("main form").filter(has=page.locator('select[name="language"]'))
    form.locator("select").select_option(language)
    form.locator('button[type="submit"]').click()
    page.wait_for_load_state("load")
    expect(page.locator("html")).to_have_attribute("lang", language)


def _check_pages(page, paths: list[str], seeded: Seeded, page_errors: list) -> None:
    for template in paths:
        path = template.format(**seeded.ids)
        response = page.goto(path, wait_until="load")
        if template in ERROR_PAGES:
            assert response.status == 404
            page_errors[:] = [error for error in page_errors if "404" not in error]
        else:
            assert response.ok, f"{path} answered {response.status}"
        assert_accessible(page, path)


def test_the_check_finds_a_serious_problem(page):
    """The helper itself: an image without a text alternative is a critical violation."""
    page.set_content('<!doctype html><html lang="en"><title>t</title><main><img src="data:,"></main></html>')
    with pytest.raises(AssertionError, match="image-alt"):
        assert_accessible(page, "a page with an unlabelled image")


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_admin_pages_have_no_serious_accessibility_problems(new_page, seeded, page_errors, viewport, language):
    page = new_page(VIEWPORTS[viewport])
    sign_in(page, seeded.admin_email)
    choose_language(page, language)
    _check_pages(page, STAFF_PAGES + ADMIN_PAGES, seeded, page_errors)
    if viewport == "phone":  # the opened menu too
        page.goto("/dashboard")
        page.locator(".menu-button").click()
        expect(page.locator("#site-menu")).to_be_visible()
        assert_accessible(page, f"/dashboard with the menu open ({language})")


def test_staff_pages_have_no_serious_accessibility_problems(page, seeded, page_errors):
    sign_in(page, seeded.staff_email)
    _check_pages(page, STAFF_PAGES, seeded, page_errors)


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_public_pages_have_no_serious_accessibility_problems(new_page, seeded, page_errors, viewport):
    _check_pages(new_page(VIEWPORTS[viewport]), PUBLIC_PAGES, seeded, page_errors)


def test_pages_in_their_answer_states_have_no_serious_accessibility_problems(page, seeded, page_errors):
    """Forms after a refusal (errors tied to their fields) and the answers of a lookup. Their refusals answer
    401 or 422, which Chromium logs as console errors: expected here."""
    page.goto("/login")
    page.get_by_label("Email").fill(seeded.staff_email)
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("load")
    assert_accessible(page, "/login after a wrong password")

    page.goto("/try")
    page.get_by_role("link", name="A-Level · ", exact=False).first.click()
    page.locator("[data-announce-text]").wait_for(state="attached")  # the demo's fields are swapped in
    page.get_by_role("button", name="Verify").click()
    page.locator(".certificate").wait_for()
    assert_accessible(page, "/try with a result")

    sign_in(page, seeded.admin_email)
    page.goto("/api-keys")
    page.get_by_role("button", name="Create key").click()
    page.locator("#name-error").wait_for()
    assert_accessible(page, "/api-keys after an empty name")

    page.goto("/verification")
    page.get_by_role("button", name="Verify").click()
    page.locator("#verification-result .alert").wait_for()
    assert_accessible(page, "/verification without the billing confirmation")
    page_errors[:] = [error for error in page_errors if not any(code in error for code in ("401", "422"))]
