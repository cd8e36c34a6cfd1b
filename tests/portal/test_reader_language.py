"""Numbers, money, sizes and codes in the reader's language; plurals by the language's rule; the staff preview's
note in the staff member's language; a refused answer link in one language throughout.

Babel writes French thousands with a narrow no-break space (U+202F) and puts a no-break space (U+00A0) before
a currency or a unit, as CLDR says; the assertions spell them out.
"""
from __future__ import annotations

import html

from core.applications.documents import document_storage
from core.db import db
from core.models import Document, User

NARROW = "\u202f"
NO_BREAK = "\u00a0"


def _choose(app, portal, language: str) -> None:
    with app.app_context():
        db.session.get(User, portal.user.id).language = language
        db.session.commit()


def _page(portal, path: str) -> str:
    response = portal.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return html.unescape(response.get_data(as_text=True))


def test_french_staff_read_money_sizes_and_counts_in_french(app, staff, factory):
    _choose(app, staff, "fr")
    inst = staff.institution
    licence = factory.program(inst, name="Licence", fee="60000", currency="RWF")
    master = factory.program(inst, name="Master", fee="75", currency="USD")
    cycle = factory.cycle(inst, programs=[licence, master], name="Rentrée 2026")
    application = factory.application(inst, program=licence, cycle=cycle, paid=True)
    with app.app_context():
        db.session.add(Document(institution_id=inst.id, application_id=application.id, kind="national_id",
                                filename="id.pdf", content_type="application/pdf", size=819,
                                sha256=document_storage().put(b"%PDF")))
        db.session.commit()

    cycles = _page(staff, "/cycles")
    assert f"60{NARROW}000{NO_BREAK}RWF" in cycles and f"75,00{NO_BREAK}$US" in cycles
    assert "60,000 RWF" not in cycles and "75.00 USD" not in cycles

    file_page = _page(staff, f"/applicants/{application.id}")
    assert f"0,8{NARROW}ko" in file_page and "0.8 KB" not in file_page
    assert "Pièce d’identité nationale" in file_page and "national_id" not in file_page
    assert f"60{NARROW}000{NO_BREAK}RWF" in file_page

    dashboard = _page(staff, f"/dashboard?cycle={cycle.id}")
    assert f"100{NO_BREAK}%" in dashboard  # the one applicant paid


def test_english_and_swahili_money(app, staff, factory):
    inst = staff.institution
    program = factory.program(inst, name="Nursing", fee="60000", currency="RWF")
    factory.cycle(inst, programs=[program], name="Intake 2026")
    assert "60,000 RWF" in _page(staff, "/cycles")
    _choose(app, staff, "sw")
    assert f"RWF{NO_BREAK}60,000" in _page(staff, "/cycles")


def test_recent_activity_names_people_and_languages_in_words(app, admin, factory):
    colleague = factory.user(admin.institution, role="staff", email="claudine@universite.rw")
    assert admin.post(f"/users/{colleague.id}/active", {"active": "false"}).status_code == 302
    assert admin.post("/account/language", {"language": "fr"}).status_code == 302
    page = _page(admin, "/account")
    assert "claudine@universite.rw" in page and colleague.id not in page
    activity = page.split("Votre activité récente", 1)[1] if "Votre activité récente" in page else page
    assert ">Français<" in activity and ">fr<" not in activity


def test_the_selection_counter_has_a_plural_for_each_language(app, staff, factory):
    factory.application(staff.institution)
    english = _page(staff, "/applicants")
    assert 'data-text-zero="None selected"' in english
    assert 'data-text-one="{count} applicant selected"' in english
    assert 'data-text-other="{count} applicants selected"' in english
    _choose(app, staff, "fr")
    french = _page(staff, "/applicants")
    assert 'data-text-zero="Aucun candidat sélectionné"' in french and "0 sélectionné" not in french
    assert 'data-text-one="{count} candidat sélectionné"' in french
    assert 'data-text-other="{count} candidats sélectionnés"' in french
    _choose(app, staff, "sw")
    swahili = _page(staff, "/applicants")
    assert 'data-text-other="Waombaji {count} wamechaguliwa"' in swahili


def test_the_preview_note_is_in_the_staff_members_language(app, staff, factory):
    _choose(app, staff, "fr")
    application = factory.application(staff.institution, decision="accepted", language="sw")
    page = _page(staff, f"/applicants/{application.id}/preview/answer-page")
    assert '<html lang="sw">' in page  # the applicant's page, in the applicant's language
    assert '<p class="preview-note" role="note" lang="fr">Aperçu pour le personnel' in page
    assert "Onyesho kwa wafanyakazi" not in page


def test_a_refused_answer_link_speaks_one_language(app):
    client = app.test_client()
    for language, heading, sentence in (
            ("fr", "Ce lien de réponse ne peut pas être utilisé", "Ce lien n’est pas valide."),
            ("sw", "Kiungo hiki cha jibu hakiwezi kutumika", "Kiungo hiki si halali."),
            ("en", "This answer link cannot be used", "This link is not valid.")):
        response = client.get("/decisions/respond/not-a-token", headers={"Accept-Language": language})
        page = html.unescape(response.get_data(as_text=True))
        assert response.status_code == 404 and f'<html lang="{language}"' in page
        assert heading in page and sentence in page, (language, page)
