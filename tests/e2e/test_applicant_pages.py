"""The applicant's pages in Chromium: the answer in two steps (choose, go back, choose again, confirm) gives
exactly one `decision.responded` webhook; at a 360 px wide screen every page and step has no horizontal
overflow, touch targets of at least 44 px, text of at least 16 px and no serious axe violation."""
from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from core.applications.decision_answers import decision_response_token
from core.db import db
from core.institutions.identity import update_identity
from core.models import Decision, Event, utcnow
from core.scoping import InstitutionScope
from core.webhooks.endpoints import save_endpoint
from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import screenshot
from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver, run_worker  # noqa: F401 (fixtures)
from tests.webhooks.independent_verifier import verify

PHONE = {"width": 360, "height": 740}
# What a 360 px page must satisfy, measured in the page: (horizontal overflow, the visible interactive elements
# lower than 44 px, the visible text elements smaller than 16 px).
MEASURE = """() => {
  const shown = (element) => {
    const box = element.getBoundingClientRect();
    return element.checkVisibility() && box.width > 0 && box.height > 0;
  };
  const describe = (element) =>
    `${element.tagName.toLowerCase()} "${(element.innerText || element.value || '').trim().slice(0, 40)}"`;
  const small = [...document.querySelectorAll('a, button, input, select, textarea')]
    .filter((element) => element.type !== 'hidden' && shown(element))
    .filter((element) => element.getBoundingClientRect().height < 44)
    .map((element) => `${describe(element)}: ${element.getBoundingClientRect().height}px`);
  const tiny = [...document.querySelectorAll('body *')]
    .filter((element) => shown(element)
      && [...element.childNodes].some((node) => node.nodeType === 3 && node.textContent.trim()))
    .filter((element) => parseFloat(getComputedStyle(element).fontSize) < 16)
    .map((element) => `${describe(element)}: ${getComputedStyle(element).fontSize}`);
  return {scrollWidth: document.documentElement.scrollWidth, small, tiny};
}"""


def assert_fits_a_phone(page, name: str) -> None:
    # Measured as a person sees it: the browser paints only once the stylesheets are in, while a script may
    # run before (the page without its CSS is 376 px wide).
    page.wait_for_load_state("load")
    measured = page.evaluate(MEASURE)
    assert measured["scrollWidth"] <= PHONE["width"], f"{name} overflows: {measured['scrollWidth']}px wide"
    assert measured["small"] == [], f"{name}: touch targets under 44 px: {measured['small']}"
    assert measured["tiny"] == [], f"{name}: text under 16 px: {measured['tiny']}"
    assert_accessible(page, name)
    screenshot(page, f"applicant-360-{name}")


def branded_institution(app, factory):
    """An institution with its identity (a long name, to test wrapping) and an open cycle."""
    institution = factory.institution("Mbarara University of Science and Technology")
    with app.app_context():
        update_identity(InstitutionScope(institution.id), {
            "display_name": "Mbarara University of Science and Technology Admissions Office",
            "brand_colour": "#5b2a86", "contact_email": "admissions@must.ac.ug",
            "website": "https://www.must.ac.ug/admissions/undergraduate-programmes",
            "footer": "P.O. Box 1410, Mbarara, Uganda"})
    program = factory.program(institution, name="Bachelor of Medicine and Bachelor of Surgery")
    cycle = factory.cycle(institution, programs=[program], name="2026/2027 Undergraduate Intake",
                          opens_at=utcnow() - timedelta(days=10), closes_at=utcnow() + timedelta(days=20))
    factory.stages(institution)
    return institution, program, cycle


def sent_decision_link(app, factory, institution, program, cycle, status: str = "accepted") -> str:
    application = factory.application(institution, program=program, cycle=cycle, first_name="Nakato",
                                      last_name="Namuli", email="nakato@example.ug", decision=status)
    with app.app_context():
        decision = Decision(institution_id=institution.id, application_id=application.id, status=status,
                            sent_at=utcnow())
        db.session.add(decision)
        db.session.commit()
        return f"/decisions/respond/{decision_response_token(decision)}"


def responded_events(app, institution) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Event).where(
            Event.institution_id == institution.id, Event.type == "decision.responded"))


def test_choose_go_back_choose_again_and_confirm_gives_one_webhook(page, app, factory, delivering):
    institution, program, cycle = branded_institution(app, factory)
    with app.app_context():
        _, secret = save_endpoint(InstitutionScope(institution.id), delivering.url(RECEIVER_HOST),
                                  events=["decision.responded"])
    link = sent_decision_link(app, factory, institution, program, cycle)

    page.goto(link)
    expect(page.get_by_role("heading", name="Your admission decision")).to_be_visible()
    page.get_by_role("link", name="Decline the offer").click()
    expect(page.get_by_role("heading", name="Confirm your answer")).to_be_visible()
    expect(page.locator("dl.summary")).to_contain_text("Decline the offer")
    expect(page.locator("dl.summary")).to_contain_text("2026/2027 Undergraduate Intake")
    page.get_by_role("link", name="Go back").click()
    expect(page.get_by_role("heading", name="Your admission decision")).to_be_visible()
    page.get_by_role("link", name="Accept the offer").click()
    expect(page.locator("dl.summary")).to_contain_text("Accept the offer")
    assert responded_events(app, institution) == 0, "choosing and going back record nothing"

    page.get_by_role("button", name="Confirm: Accept the offer").dblclick()
    expect(page.locator(".recorded")).to_contain_text(re.compile(r"You accepted the offer on \d{1,2} \w+ \d{4}\."))
    expect(page.locator(".recorded")).to_contain_text("To change your answer, contact admissions@must.ac.ug.")
    # Back to the confirmation step and submit it again: still the recorded answer, nothing new.
    page.go_back()
    page.wait_for_load_state("load")
    if page.get_by_role("button", name="Confirm: Accept the offer").count():
        page.get_by_role("button", name="Confirm: Accept the offer").click()
    expect(page.locator(".recorded")).to_contain_text("You accepted the offer on")

    assert responded_events(app, institution) == 1
    run_worker(app)
    received = delivering.server.wait_for(1)
    time.sleep(0.5)  # a second delivery, if one were queued, would have arrived by now
    bodies = [verify(secret, request.headers, request.body, time.time()) for request in delivering.requests]
    assert [body["type"] for body in bodies] == ["decision.responded"] and len(received) == 1
    assert bodies[0]["data"]["response"] == "accepted"


@pytest.mark.parametrize("status", ["accepted", "waitlisted"])
def test_every_applicant_page_fits_a_360_px_screen(new_page, app, factory, status, page_errors):
    institution, program, cycle = branded_institution(app, factory)
    page = new_page(PHONE)

    page.goto(f"/apply/{institution.id}")
    assert_fits_a_phone(page, f"apply-{status}")
    page.get_by_label("First name").fill("Nakato")
    page.get_by_label("Last name").fill("Namuli")
    page.get_by_label("Email").fill(f"nakato.{status}@example.ug")
    page.get_by_label("Phone").fill("+256700000001")
    page.get_by_role("button", name="Submit application").click()
    expect(page.get_by_role("heading", name="Application submitted")).to_be_visible()
    assert_fits_a_phone(page, f"submitted-{status}")

    page.goto(sent_decision_link(app, factory, institution, program, cycle, status))
    assert_fits_a_phone(page, f"answer-choose-{status}")
    page.locator("ul.choices a").first.click()
    expect(page.get_by_role("heading", name="Confirm your answer")).to_be_visible()
    assert_fits_a_phone(page, f"answer-confirm-{status}")
    page.locator("form.actions button").click()
    expect(page.locator(".recorded")).to_be_visible()
    assert_fits_a_phone(page, f"answer-recorded-{status}")

    response = page.goto("/decisions/respond/not-a-real-link")
    assert response.status == 404
    page_errors[:] = [error for error in page_errors if "404" not in error]
    assert_fits_a_phone(page, f"answer-refused-{status}")
