"""Applicant-facing text in English, French and Swahili (Flask-Babel catalogues), English when a string is
missing from a catalogue."""
from __future__ import annotations

import re
import shutil

import pytest
from babel.messages.pofile import read_po, write_po
from sqlalchemy import select

from core.config import PROJECT_ROOT
from core.db import db
from core.i18n import compile_catalogues
from core.messages.log import set_default_language
from core.models import Applicant
from core.scoping import InstitutionScope
from tests.events.sources.conftest import csrf_token
from tests.messages.conftest import all_messages, run_message_worker, send_decisions
from wsgi import babel


def _decide(factory, app, *, language=None, default=None, decision="accepted"):
    institution = factory.institution("Université du Burundi")
    if default:
        with app.app_context():
            set_default_language(InstitutionScope(institution.id), default)
    _, key = factory.api_key(institution)
    program = factory.program(institution, name="Médecine")
    cycle = factory.cycle(institution, programs=[program], name="Rentrée 2026")
    application = factory.application(institution, program=program, cycle=cycle, first_name="Aline",
                                      language=language)
    assert send_decisions(app.test_client(), key, [application.id], decision).status_code == 200
    run_message_worker(app)
    return application


def test_the_french_catalogue_renders_the_decision_email(mail_app, smtp, factory):
    _decide(factory, mail_app, language="fr")
    email = smtp.received[0].message
    assert email["Subject"] == "Université du Burundi : votre décision d'admission en Médecine"
    text = email.get_body(("plain",)).get_content()
    assert text.startswith("Bonjour Aline,")
    assert "Décision : Admis(e)" in text and "Une place vous est offerte." in text
    assert re.search(r"Ce lien est personnel et reste valable jusqu'au \d{1,2} \w+ \d{4}\.", text)
    assert "Merci de nous dire si vous acceptez ou refusez l'offre." in text
    html = email.get_body(("html",)).get_content()
    assert '<html lang="fr">' in html and "Accepter ou refuser l&#39;offre" in html
    assert all_messages(mail_app)[0].language == "fr"


def test_the_swahili_catalogue_renders_the_email_for_an_institution_that_defaults_to_swahili(mail_app, smtp,
                                                                                              factory):
    _decide(factory, mail_app, default="sw", decision="waitlisted")
    email = smtp.received[0].message
    assert email["Subject"] == "Université du Burundi: uamuzi wa udahili wako wa Médecine"
    text = email.get_body(("plain",)).get_content()
    assert text.startswith("Mpendwa Aline,") and "Uamuzi: Orodha ya kusubiri" in text
    assert re.search(r"Kiungo hiki ni chako binafsi na kitatumika hadi \d{1,2} \w+ \d{4}\.", text)
    assert "Tafadhali tuambie kama unataka kubaki kwenye orodha ya kusubiri au kujiondoa." in text
    assert all_messages(mail_app)[0].language == "sw"


def test_the_applicants_language_wins_over_the_institutions_and_english_is_the_default(mail_app, smtp, factory):
    _decide(factory, mail_app, language="en", default="fr")
    _decide(factory, mail_app)
    assert [m.language for m in all_messages(mail_app)] == ["en", "en"]
    assert all(r.message.get_body(("plain",)).get_content().startswith("Dear Aline,") for r in smtp.received)


def test_the_apply_form_follows_the_browser_and_stores_the_chosen_language(app, factory, monkeypatch):
    monkeypatch.setitem(app.config, "PUBLIC_FORM_RATE_LIMIT", "100000/minute")
    institution = factory.institution("Université du Burundi")
    program = factory.program(institution, name="Droit")
    cycle = factory.cycle(institution, programs=[program])
    factory.stages(institution)
    client = app.test_client()
    page = client.get(f"/apply/{institution.id}", headers={"Accept-Language": "sw-KE,sw;q=0.9,en;q=0.5"})
    html = page.get_data(as_text=True)
    assert '<html lang="sw">' in html and "Omba kujiunga na Université du Burundi" in html
    assert "Jina la kwanza" in html and re.search(r'<option selected value="sw">|<option value="sw" selected', html)
    french = client.get(f"/apply/{institution.id}?lang=fr").get_data(as_text=True)
    assert "Postuler à Université du Burundi" in french and "Envoyer la candidature" in french
    # The applicant's pages are the institution's: no staff or partner links in any language.
    assert "Marejeleo ya API" not in html and "/api/v1/docs" not in french

    response = client.post(f"/apply/{institution.id}", headers={"Accept-Language": "sw"}, data={
        "csrf_token": csrf_token(html), "cycle_id": cycle.id, "program_id": program.id, "first_name": "Aline",
        "last_name": "Niyonkuru", "email": "aline@example.bi", "phone": "+25779000000", "language": "fr"})
    assert response.status_code == 302
    assert "Candidature envoyée" in client.get(response.headers["Location"]).get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(Applicant.language).where(Applicant.email == "aline@example.bi")) == "fr"


def test_the_decision_page_speaks_the_applicants_language(mail_app, smtp, factory):
    _decide(factory, mail_app, language="sw")
    text = smtp.received[0].message.get_body(("plain",)).get_content()
    [link] = re.findall(r"http://\S+/decisions/respond/(\S+)", text)
    page = mail_app.test_client().get(f"/decisions/respond/{link}").get_data(as_text=True)
    assert "Uamuzi kuhusu udahili wako" in page and ">Kubali nafasi</a>" in page and ">Kataa nafasi</a>" in page
    english = mail_app.test_client().get(f"/decisions/respond/{link}?lang=en").get_data(as_text=True)
    assert "Your admission decision" in english


@pytest.fixture
def french_missing_one_string(app, tmp_path):
    """A French catalogue without the greeting, compiled and used instead of the real one for one test."""
    source = tmp_path / "po"
    shutil.copytree(PROJECT_ROOT / "translations", source, ignore=shutil.ignore_patterns("*.pot"))
    po_path = source / "fr" / "LC_MESSAGES" / "messages.po"
    with po_path.open("rb") as handle:
        catalogue = read_po(handle, locale="fr")
    catalogue.delete("Dear %(name)s,")
    with po_path.open("wb") as handle:
        write_po(handle, catalogue)
    compiled = compile_catalogues(tmp_path / "mo", source)
    with app.app_context():
        configuration = app.extensions["babel"]
        original = configuration.translation_directories
        configuration.translation_directories = [str(compiled)]
        babel.domain_instance.cache.clear()
    yield
    with app.app_context():
        configuration.translation_directories = original
        babel.domain_instance.cache.clear()


def test_a_string_missing_from_a_catalogue_falls_back_to_english(mail_app, smtp, factory,
                                                                 french_missing_one_string):
    _decide(factory, mail_app, language="fr")
    text = smtp.received[0].message.get_body(("plain",)).get_content()
    assert text.startswith("Dear Aline,")  # the missing string, in English
    assert "Décision : Admis(e)" in text  # the rest still in French
