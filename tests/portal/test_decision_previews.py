"""From the applicant's file, staff see the decision email and the answer page as the applicant will, in the
applicant's language, without anything being written, sent or answerable."""
from __future__ import annotations

import html
import re

from sqlalchemy import func, select

from core.db import db
from core.institutions.identity import update_identity
from core.models import Decision, Event
from core.models.messages import Message
from core.scoping import InstitutionScope


def _text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))).split())


def _nothing_written(app) -> bool:
    with app.app_context():
        return all(db.session.scalar(select(func.count()).select_from(model)) == 0
                   for model in (Message, Event, Decision))


def _branded(app, institution, **values):
    with app.app_context():
        update_identity(InstitutionScope(institution.id), values)


def test_the_email_preview_shows_the_sender_reply_to_and_both_parts_without_sending(staff, factory, app):
    _branded(app, staff.institution, display_name="Kigali School of Nursing", contact_email="admissions@ksn.ac.rw",
             brand_colour="#7a1f2b")
    program = factory.program(staff.institution, name="BSc Nursing")
    application = factory.application(staff.institution, program=program, first_name="Aline",
                                      email="aline@example.com", decision="accepted")
    file_page = staff.get(f"/applicants/{application.id}").get_data(as_text=True)
    assert f'href="/applicants/{application.id}/preview/email"' in file_page
    assert f'href="/applicants/{application.id}/preview/answer-page"' in file_page

    page = staff.get(f"/applicants/{application.id}/preview/email")
    text = _text(page)
    assert page.status_code == 200
    assert "From Kigali School of Nursing <no-reply@karibu.localhost>" in text
    assert "Reply-To admissions@ksn.ac.rw" in text and "To aline@example.com" in text
    assert "Dear Aline," in text and "BSc Nursing" in text
    assert "preview-only-not-a-real-link" in text

    part = staff.get(f"/applicants/{application.id}/preview/email.html")
    assert part.status_code == 200 and part.mimetype == "text/html"
    assert "sandbox" in part.headers["Content-Security-Policy"]
    assert "#7a1f2b" in part.get_data(as_text=True)
    assert _nothing_written(app)


def test_previews_are_in_the_applicants_language_and_name_another_decision_on_request(staff, factory, app):
    application = factory.application(staff.institution, first_name="Jean", language="fr", decision="accepted")
    email = _text(staff.get(f"/applicants/{application.id}/preview/email?decision=waitlisted"))
    assert "Jean" in email and "liste d'attente" in email and "Dear" not in email

    answer = staff.get(f"/applicants/{application.id}/preview/answer-page?decision=waitlisted")
    body = answer.get_data(as_text=True)
    assert answer.status_code == 200 and '<html lang="fr">' in body
    assert "Rester sur la liste d'attente" in html.unescape(body)
    assert "/confirm" not in body and "/decisions/respond/" not in body  # the choices are inert
    assert answer.headers["Cache-Control"] == "no-store"
    assert _nothing_written(app)


def test_the_answer_page_preview_shows_the_institutions_identity_and_the_choices(staff, factory, app):
    _branded(app, staff.institution, display_name="Kampala Polytechnic", contact_email="apply@kp.ac.ug")
    program = factory.program(staff.institution, name="Diploma in Civil Engineering")
    application = factory.application(staff.institution, program=program, decision="accepted")
    text = _text(staff.get(f"/applicants/{application.id}/preview/answer-page"))
    assert "Preview for staff" in text
    assert "Kampala Polytechnic" in text and "apply@kp.ac.ug" in text
    assert "Diploma in Civil Engineering" in text
    assert "Accept the offer" in text and "Decline the offer" in text
    assert "Staff sign-in" not in text and "API reference" not in text


def test_nothing_to_preview_without_a_decision_and_nothing_of_another_institution(staff, factory, app):
    undecided = factory.application(staff.institution)
    for path in ("email", "email.html", "answer-page"):
        assert staff.get(f"/applicants/{undecided.id}/preview/{path}").status_code == 400
        assert staff.get(f"/applicants/{undecided.id}/preview/{path}?decision=maybe").status_code == 400
    foreign = factory.application(factory.institution(), decision="accepted")
    for path in ("email", "email.html", "answer-page"):
        assert staff.get(f"/applicants/{foreign.id}/preview/{path}").status_code == 404


def test_a_sent_messages_page_shows_its_from_and_reply_to(admin, factory, app):
    _branded(app, admin.institution, display_name="Gulu University", contact_email="admissions@gu.ac.ug")
    application = factory.application(admin.institution, decision="rejected")
    assert admin.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"}).status_code == 302
    with app.app_context():
        message_id = db.session.scalar(select(Message.id))
    text = _text(admin.get(f"/messages/{message_id}"))
    assert "From Gulu University <no-reply@karibu.localhost>" in text
    assert "Reply-To admissions@gu.ac.ug" in text
