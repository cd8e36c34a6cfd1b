"""A data-subject erase in Chromium: a person applied twice through the public form (one email, typed
differently); the admin's privacy page lists both applications under one record with the counts of what an
erase does, is accessible, and the erase leaves the applicant file anonymous."""
from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import screenshot, sign_in


def _apply(page, institution_id: str, program: str, email: str) -> None:
    page.goto(f"/apply/{institution_id}")
    page.get_by_label("Program").select_option(label=program)
    page.get_by_label("First name").fill("Wambui")
    page.get_by_label("Last name").fill("Njeri-Karanja")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Phone").fill("+254 722 000 123")
    page.get_by_role("button").last.click()
    page.wait_for_url(f"**/apply/{institution_id}/submitted")


def test_the_privacy_page_lists_every_record_of_the_person_then_erases_them(new_page, factory):
    institution = factory.institution("Nairobi Institute of Technology")
    admin = factory.user(institution, role="admin", email="dpo@nit.ac.ke")
    programs = [factory.program(institution, name=name, currency="KES") for name in ("Diploma in ICT", "BCom")]
    factory.cycle(institution, programs=programs, name="May 2027 intake")
    applicant_page = new_page()
    _apply(applicant_page, institution.id, "Diploma in ICT", "wambui.njeri@example.co.ke")
    _apply(applicant_page, institution.id, "BCom", "Wambui.Njeri@Example.co.ke ")

    page = new_page()
    sign_in(page, admin.email)
    page.goto("/applicants")
    page.get_by_role("link", name="Wambui Njeri-Karanja").first.click()
    page.get_by_role("link", name="Export or erase this person's data").click()
    records = page.locator("#person-records tbody tr")
    expect(records).to_have_count(1)
    expect(records.first).to_contain_text("Diploma in ICT")
    expect(records.first).to_contain_text("BCom")
    expect(page.locator('#held-counts tr[data-kind="applications"] td.num')).to_have_text("2")
    assert_accessible(page)
    screenshot(page, "applicant-privacy")

    page.get_by_label("Why is this erasure asked for?").fill("Email of 3 May, ticket 88")
    page.get_by_label("Type ERASE to confirm").fill("ERASE")
    page.get_by_role("button", name="Erase the personal data of 1 record").click()
    expect(page.get_by_text("The personal data of 1 record was erased")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("Wambui")
