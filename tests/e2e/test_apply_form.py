"""The apply form in Chromium: the phone number is judged in the browser exactly as the server judges it (the
same rule, the same message), and a submission with several mistakes shows them all at once, each at its field."""
from __future__ import annotations

import re

from playwright.sync_api import expect

from core.applications.applying import ApplicantFields, applicant_field_problems

SAMPLES = ("+250 788 123 456", "0788-123-456", "250788123456", "+1234567", "123456", "+250 78a 123 456",
           "call me", "++250788123456", "1234567890123456", "  +256 772 123 456  ")


def server_refuses(phone: str) -> bool:
    _, problems = applicant_field_problems(ApplicantFields("A", "B", "a@example.com", phone), phone_required=True)
    return any(problem["name"] == "phone" for problem in problems)


def open_form(page, factory, language: str = "en"):
    institution = factory.institution("Kigali University")
    nursing = factory.program(institution, name="BSc Nursing", currency="RWF")
    law = factory.program(institution, name="BA Law", currency="RWF")
    factory.cycle(institution, programs=[nursing, law], name="September intake")
    factory.stages(institution)
    page.goto(f"/apply/{institution.id}?lang={language}")
    return institution


def test_the_browser_judges_a_phone_number_as_the_server_does(page, app, factory):
    open_form(page, factory)
    phone = page.get_by_label("Phone")
    expect(phone).to_have_attribute("placeholder", "+250 7xx xxx xxx")
    for sample in SAMPLES:
        phone.fill(sample)
        phone.blur()
        refused = phone.get_attribute("aria-invalid") == "true"
        assert refused == server_refuses(sample), sample
        if refused:
            expect(page.locator("#phone-error")).to_have_text(
                "Phone: Enter a phone number of 7 to 15 digits, which may start with +.")
            assert "phone-error" in phone.get_attribute("aria-describedby").split()
        else:
            expect(page.locator("#phone-error")).to_have_count(0)
    phone.fill("")
    phone.blur()
    expect(page.locator("#phone-error")).to_have_text("Phone: This is required.")
    phone.fill("+250 788 123 456")  # fixed: the error goes as the applicant types
    expect(page.locator("#phone-error")).to_have_count(0)
    expect(phone).not_to_have_attribute("aria-invalid", "true")


def test_every_mistake_shows_at_once_in_french(page, app, factory, page_errors):
    open_form(page, factory, "fr")
    expect(page.get_by_label("Programme")).to_have_value("")  # nothing chosen for the applicant
    page.get_by_label("Nom", exact=True).fill("Uwimana")
    page.get_by_label("E-mail").fill("pas-une-adresse")
    phone = page.get_by_label("Téléphone")
    phone.fill("appelez-moi")
    phone.blur()
    expect(page.locator("#phone-error")).to_contain_text("Téléphone : Saisissez un numéro")
    page.get_by_role("button", name="Envoyer la candidature").click()

    summary = page.locator("#error-summary")
    expect(summary).to_contain_text("Veuillez corriger 4 erreurs")
    expect(summary).to_be_focused()  # read first
    expect(summary.get_by_role("link")).to_have_text([
        "Programme : Ce champ est obligatoire.", "Prénom : Ce champ est obligatoire.",
        "E-mail : Saisissez une adresse e-mail comme nom@exemple.com.",
        "Téléphone : Saisissez un numéro de téléphone de 7 à 15 chiffres, qui peut commencer par +."])
    for label in ("Programme", "Prénom", "E-mail", "Téléphone"):
        field = page.get_by_label(label, exact=True)
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(field).to_have_accessible_description(re.compile(rf"{label} ?: "))
    expect(page.get_by_label("Nom", exact=True)).to_have_value("Uwimana")  # what was typed is kept
    summary.get_by_role("link", name="Prénom : Ce champ est obligatoire.").click()
    expect(page.get_by_label("Prénom", exact=True)).to_be_focused()
    # The refused submission answers 400, which Chromium reports on its console: that one is expected.
    page_errors[:] = [error for error in page_errors if "status of 400" not in error]
