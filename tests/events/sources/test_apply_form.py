"""The apply form as an applicant meets it: every mistake at once, each at its field (aria-invalid, the message
tied by aria-describedby) and named as its label names it, in the page's language; no program chosen for the
applicant; the phone number checked by one rule in the browser and on the server, with the country's format."""
from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import func, select

from core.applications.applying import PHONE_IGNORED, PHONE_PATTERN
from core.applications.references import CROCKFORD_ALPHABET
from core.db import db
from core.models import Application
from tests.events.sources.conftest import csrf_token

# What each language calls the fields the test gets wrong, and says about them.
WORDS = {
    "fr": {"program_id": "Programme", "first_name": "Prénom", "email": "E-mail", "phone": "Téléphone",
           "required": "Ce champ est obligatoire.", "email_rule": "Saisissez une adresse e-mail",
           "phone_rule": "Saisissez un numéro de téléphone de 7 à 15 chiffres", "summary": "Veuillez corriger 4 erreurs"},
    "sw": {"program_id": "Programu", "first_name": "Jina la kwanza", "email": "Barua pepe", "phone": "Simu",
           "required": "Hii inahitajika.", "email_rule": "Andika anwani ya barua pepe",
           "phone_rule": "Andika namba ya simu yenye tarakimu 7 hadi 15", "summary": "Tafadhali sahihisha makosa 4"},
}


def two_programs(factory, institution):
    nursing = factory.program(institution, name="BSc Nursing", fee="45000", currency="RWF")
    law = factory.program(institution, name="BA Law", fee="45000", currency="RWF")
    cycle = factory.cycle(institution, programs=[nursing, law], name="September intake")
    return cycle, nursing, law


def control(page: str, name: str) -> str:
    """The opening tag of the form control named `name`."""
    return re.search(rf'<(?:input|select)\b[^>]*\bname="{name}"[^>]*>', page).group(0)


def attribute(tag: str, name: str) -> str | None:
    found = re.search(rf'\b{name}="([^"]*)"', tag)
    return html.unescape(found.group(1)) if found else None


def error_of(page: str, tag: str) -> str:
    """The text of the error the control's aria-describedby points to."""
    ids = attribute(tag, "aria-describedby").split()
    [error_id] = [identifier for identifier in ids if identifier.endswith("-error")]
    return html.unescape(re.search(rf'<p class="error" id="{error_id}">(.*?)</p>', page, re.S).group(1))


@pytest.mark.parametrize("language", ["fr", "sw"])
def test_every_mistake_shows_at_once_at_its_field_in_the_applicants_language(sources, client, factory, language):
    institution = factory.institution("Kigali University")
    cycle, _, _ = two_programs(factory, institution)
    address = f"/apply/{institution.id}?lang={language}"
    page = client.get(address).get_data(as_text=True)
    response = client.post(address, data={"csrf_token": csrf_token(page), "cycle_id": cycle.id, "program_id": "",
                                          "first_name": " ", "last_name": "Uwimana", "email": "not-an-email",
                                          "phone": "call me", "language": language})
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    words = WORDS[language]
    expected = {"program_id": words["required"], "first_name": words["required"], "email": words["email_rule"],
                "phone": words["phone_rule"]}
    for name, rule in expected.items():
        tag = control(page, name)
        assert attribute(tag, "aria-invalid") == "true", tag
        message = error_of(page, tag)
        assert re.match(rf"{words[name]} ?: ", message) and rule in message, message  # the label, not `first_name`
    for name in ("cycle_id", "last_name", "language"):
        assert attribute(control(page, name), "aria-invalid") is None
    summary = re.search(r'<div class="alert alert-bad error-summary".*?</div>', page, re.S).group(0)
    assert words["summary"] in summary
    assert re.findall(r'<a href="#(\w+)">', summary) == ["program_id", "first_name", "email", "phone"]
    assert not re.search(r"\b(first_name|program_id|email|phone) (is|must)\b", page)  # no raw names, no English
    assert count_applications(sources) == 0


def count_applications(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Application))


def test_no_program_is_chosen_for_the_applicant_when_there_are_several(sources, client, factory):
    institution = factory.institution()
    two_programs(factory, institution)
    page = client.get(f"/apply/{institution.id}").get_data(as_text=True)
    programs = re.search(r'<select[^>]*name="program_id".*?</select>', page, re.S).group(0)
    options = re.findall(r"<option([^>]*)>([^<]*)</option>", programs)
    assert [label for _, label in options] == ["Choose a program", "BA Law", "BSc Nursing"]
    assert not any("selected" in attributes for attributes, label in options if label != "Choose a program")
    assert re.search(r"\srequired\b", control(page, "program_id"))


def test_a_single_program_is_given(sources, client, factory):
    institution = factory.institution()
    program = factory.program(institution, name="BSc Nursing")
    factory.cycle(institution, programs=[program])
    page = client.get(f"/apply/{institution.id}").get_data(as_text=True)
    programs = re.search(r'<select[^>]*name="program_id".*?</select>', page, re.S).group(0)
    assert "Choose a program" not in programs and f'value="{program.id}"' in programs


def test_the_phone_field_carries_the_servers_rule_and_the_countrys_format(sources, client, factory):
    institution = factory.institution()
    two_programs(factory, institution)  # fees in RWF: Rwanda
    page = client.get(f"/apply/{institution.id}?lang=fr").get_data(as_text=True)
    phone = control(page, "phone")
    assert attribute(phone, "data-phone-pattern") == PHONE_PATTERN.pattern
    assert attribute(phone, "data-phone-ignored") == PHONE_IGNORED.pattern
    assert attribute(phone, "placeholder") == "+250 7xx xxx xxx"
    assert attribute(phone, "data-phone-message").startswith("Téléphone : Saisissez un numéro")
    assert "phone-hint" in attribute(phone, "aria-describedby")
    assert "Avec l'indicatif du pays, par exemple +250 7xx xxx xxx." in html.unescape(page)
    assert '<script src="/static/apply.js" defer></script>' in page


def test_the_submitted_page_gives_the_reference_to_read_aloud(sources, client, factory):
    institution = factory.institution("Dar es Salaam University")
    cycle, nursing, _ = two_programs(factory, institution)
    page = client.get(f"/apply/{institution.id}?lang=sw").get_data(as_text=True)
    response = client.post(f"/apply/{institution.id}?lang=sw", data={
        "csrf_token": csrf_token(page), "cycle_id": cycle.id, "program_id": nursing.id, "first_name": "Neema",
        "last_name": "Mushi", "email": "neema@example.co.tz", "phone": "+255 754-123-456", "language": "sw"})
    assert response.status_code == 302
    with sources.app_context():
        reference = db.session.scalar(select(Application.reference))
    assert re.fullmatch(rf"DSU-\d{{4}}-[{CROCKFORD_ALPHABET}]{{5}}", reference)
    submitted = client.get(response.headers["Location"]).get_data(as_text=True)
    assert f"<code>{reference}</code>" in submitted
