"""Sending decisions says what will really happen before it happens: the decision by name, and per applicant
the channels that will carry it (email when the address is valid, SMS only when SMS is configured and the phone
is in international format). Nothing is sent until the confirmation comes back."""
from __future__ import annotations

import html
import re

from sqlalchemy import func, select

from core.db import db
from core.models import Event
from core.models.messages import Message
from tests.portal.bulk_confirmation import confirmation_token


def _text(response) -> str:
    """The response's visible text on one line (tags dropped, entities decoded)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))).split())


def _sent(app) -> tuple[int, int]:
    with app.app_context():
        events = db.session.scalar(select(func.count()).select_from(Event).where(Event.type == "decision.sent"))
        messages = db.session.scalar(select(func.count()).select_from(Message))
    return events, messages


def test_the_file_asks_first_naming_the_decision_and_the_email_only_when_sms_is_off(staff, factory, app):
    application = factory.application(staff.institution, first_name="Aline", last_name="Mukamana",
                                      email="aline@example.com", decision="waitlisted")
    page = staff.get(f"/applicants/{application.id}")
    assert "Send decision “Waitlisted” to the applicant…" in _text(page)

    ask = staff.post(f"/applicants/{application.id}/send-decision", htmx=True)
    text = _text(ask)
    assert ask.status_code == 200
    assert "Send the decision “Waitlisted” to Aline Mukamana?" in text
    assert "By email to aline@example.com. Text messages are not configured, so none is sent." in text
    assert "text message to" not in text
    assert _sent(app) == (0, 0)

    sent = staff.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"}, htmx=True)
    assert sent.status_code == 200 and "The decision “Waitlisted” was sent to the applicant." in _text(sent)
    assert _sent(app) == (1, 1)


def test_with_sms_configured_the_phone_is_named_only_when_it_can_be_used(staff, factory, app, monkeypatch):
    monkeypatch.setitem(app.config, "SMS_PROVIDER", "africastalking")
    international = factory.application(staff.institution, email="a@example.com", phone="+250788123456",
                                        decision="accepted")
    local = factory.application(staff.institution, email="b@example.com", phone="0788123456", decision="accepted")
    no_email = factory.application(staff.institution, email="not-an-address", phone="+256700000001",
                                   decision="rejected")

    both = _text(staff.post(f"/applicants/{international.id}/send-decision", htmx=True))
    assert "By email to a@example.com and by text message to +250788123456." in both
    only_email = _text(staff.post(f"/applicants/{local.id}/send-decision", htmx=True))
    assert ("By email to b@example.com. No text message: the phone number is missing or not in international "
            "format") in only_email
    only_sms = _text(staff.post(f"/applicants/{no_email.id}/send-decision", htmx=True))
    assert "Send the decision “Rejected”" in only_sms
    assert "By text message to +256700000001 only: the email address is not valid." in only_sms
    assert _sent(app) == (0, 0)


def test_the_no_javascript_confirmation_is_the_file_page(staff, factory, app):
    application = factory.application(staff.institution, email="c@example.com", decision="accepted")
    ask = staff.post(f"/applicants/{application.id}/send-decision")
    assert ask.status_code == 200 and "<h1" in ask.get_data(as_text=True)
    assert "Send the decision “Accepted”" in _text(ask) and _sent(app) == (0, 0)
    assert staff.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"}).status_code == 302
    assert _sent(app) == (1, 1)


def test_asking_to_send_nothing_or_a_foreign_decision_is_refused_before_any_confirmation(staff, factory, app):
    undecided = factory.application(staff.institution)
    assert staff.post(f"/applicants/{undecided.id}/send-decision", htmx=True).status_code == 400
    foreign = factory.application(factory.institution(), decision="accepted")
    assert staff.post(f"/applicants/{foreign.id}/send-decision", htmx=True).status_code == 400
    assert _sent(app) == (0, 0)


def test_the_bulk_confirmation_names_each_decision_and_how_it_reaches_each_applicant(staff, factory, app,
                                                                                      monkeypatch):
    monkeypatch.setitem(app.config, "SMS_PROVIDER", "africastalking")
    accepted = factory.application(staff.institution, first_name="Eric", last_name="Habimana",
                                   email="eric@example.com", phone="+250788000111", decision="accepted")
    waitlisted = factory.application(staff.institution, first_name="Grace", last_name="Uwera",
                                     email="grace@example.com", phone=None, decision="waitlisted")
    unreachable = factory.application(staff.institution, first_name="Jean", last_name="Bosco",
                                      email="nobody", phone="0788", decision="waitlisted")
    ids = [accepted.id, waitlisted.id, unreachable.id]

    ask = staff.post("/applicants/bulk", {"ids": ids, "send_decision": "true"}, htmx=True)
    text = _text(ask)
    assert ask.status_code == 200
    assert "Send 3 decisions?" in text
    assert "Decisions to send: Waitlisted × 2, Accepted × 1." in text
    assert "Emails: 2 of 3 applicants." in text
    assert "Text messages: 1 of 3 applicants" in text
    assert "1 applicant will get no message at all (no valid email address)." in text
    assert "Eric Habimana Accepted Email and text message" in text
    assert "Grace Uwera Waitlisted Email" in text
    assert "Jean Bosco Waitlisted None: nothing will reach them" in text
    assert "gets an email and a text message" not in text
    assert _sent(app) == (0, 0)

    # The same change setting a new decision names that decision, not the current ones.
    ask = _text(staff.post("/applicants/bulk", {"ids": ids[:2], "decision": "rejected", "send_decision": "true"},
                           htmx=True))
    assert "Decisions to send: Rejected × 2." in ask


def test_the_bulk_confirmation_says_text_messages_are_off_when_they_are(staff, factory, app):
    applications = [factory.application(staff.institution, decision="accepted") for _ in range(2)]
    text = _text(staff.post("/applicants/bulk", {"ids": [a.id for a in applications], "send_decision": "true"},
                            htmx=True))
    assert "Text messages: none, they are not configured." in text and "Emails: 2 of 2 applicants." in text


def test_sending_to_every_matching_applicant_is_confirmed_with_what_will_be_sent(staff, factory, app):
    program = factory.program(staff.institution)
    cycle = factory.cycle(staff.institution, programs=[program])
    for number in range(3):
        factory.application(staff.institution, program=program, cycle=cycle, first_name=f"Paid{number}",
                            email=f"paid{number}@example.com", paid=True, decision="accepted")
    factory.application(staff.institution, program=program, cycle=cycle, email="unpaid@example.com",
                        decision="accepted")
    change = {"matching": "paid=true", "decision": "waitlisted", "stage": "interview", "send_decision": "y"}

    ask = staff.post("/applicants/bulk-matching", change, htmx=True)
    text = _text(ask)
    assert ask.status_code == 200
    assert "Move 3 applicants to “Interview” and set the decision “Waitlisted”?" in text
    assert "Every applicant matching the filters is changed, including those not shown." in text
    assert "The decisions are then sent to the applicants." in text
    assert "Decisions to send: Waitlisted × 3." in text
    assert "Emails: 3 of 3 applicants." in text and "Text messages: none, they are not configured." in text
    token = confirmation_token(ask)
    assert _sent(app) == (0, 0)

    stale = staff.post("/applicants/bulk-matching", {**change, "matching": "", "confirmation": token}, htmx=True)
    assert "Move 4 applicants to “Interview” and set the decision “Waitlisted”?" in _text(stale)
    assert _sent(app) == (0, 0), "a token confirms the filters it was asked for, not others"
    cancelled = staff.post("/applicants/bulk-matching", {**change, "cancel": "y"}, htmx=True)
    assert "Nothing was changed or sent." in _text(cancelled) and _sent(app) == (0, 0)

    done = staff.post("/applicants/bulk-matching", {**change, "confirmation": token}, htmx=True)
    assert "3 of the 3 matching applications changed." in _text(done)
    assert _sent(app) == (3, 3)


def test_the_no_javascript_matching_confirmation_is_a_page_that_carries_the_change(staff, factory, app):
    factory.application(staff.institution, decision="rejected", email="r@example.com")
    ask = staff.post("/applicants/bulk-matching", {"matching": "", "send_decision": "y"})
    page = ask.get_data(as_text=True)
    assert ask.status_code == 200 and "<h1" in page
    assert "Send 1 decision?" in _text(ask) and "including those not shown" in _text(ask)
    assert 'name="send_decision" value="y"' in page and 'form="matching-confirm" data-confirm-change' in page
    assert _sent(app) == (0, 0)
    assert staff.post("/applicants/bulk-matching", {"matching": "", "send_decision": "y",
                                                     "confirmation": confirmation_token(ask)}).status_code == 302
    assert _sent(app) == (1, 1)
