"""decision.responded from the applicant's signed accept/decline link (and staff recording the answer)."""
from __future__ import annotations

from datetime import timedelta

import itsdangerous.timed
import pytest
from itsdangerous import URLSafeTimedSerializer
from sqlalchemy import func, select

from core.accounts.preferences import time_zone_of
from core.applications.decision_answers import decision_response_token, record_decision_response_by_staff
from core.errors import Conflict, NotFound
from core.db import db
from core.applications.history import Actor
from core.models import Decision, Event, utcnow
from core.scoping import InstitutionScope
from core.timefmt import applicant_date, isoformat_z
from tests.events.sources.conftest import (
    assert_written_and_delivered, audit_rows, csrf_token, events_of, subscribe,
)

STAFF = Actor.staff("registrar@example.ac.ke")


def make_decision(app, factory, institution, status: str = "accepted", sent: bool = True) -> tuple[str, str]:
    """A decision on a new application; returns (decision id, response-link token)."""
    application = factory.application(institution, decision=status, first_name="Grace", last_name="Achieng")
    with app.app_context():
        decision = Decision(institution_id=institution.id, application_id=application.id, status=status,
                            sent_at=utcnow() if sent else None)
        db.session.add(decision)
        db.session.commit()
        return decision.id, decision_response_token(decision)


def confirm_page(client, token: str, response: str):
    """The second step of the answer: showing it records nothing."""
    return client.get(f"/decisions/respond/{token}/confirm?response={response}")


def answer(client, token: str, response: str | None, with_csrf: bool = True, csrf_page: str | None = None):
    """Choose `response`, then confirm it (the POST of the confirmation page)."""
    shown = response if response in ("accepted", "declined") else "accepted"
    page = client.get(csrf_page or f"/decisions/respond/{token}/confirm?response={shown}")
    data = {"response": response} if response else {}
    if with_csrf:
        data["csrf_token"] = csrf_token(page.get_data(as_text=True))
    return client.post(f"/decisions/respond/{token}", data=data)


def decision_row(app, decision_id: str) -> Decision:
    with app.app_context():
        row = db.session.get(Decision, decision_id)
        db.session.expunge(row)
        return row


def shown_date(app, institution, value) -> str:
    """A date as an English-reading applicant of the institution sees it."""
    with app.app_context():
        return applicant_date(value, time_zone_of(InstitutionScope(institution.id)), "en")


def event_count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Event))


def test_page_shows_the_decision_and_two_choices_that_record_nothing(sources, client, factory):
    institution = factory.institution("Makerere University")
    decision_id, token = make_decision(sources, factory, institution)
    response = client.get(f"/decisions/respond/{token}")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "Grace" in html and "Makerere University" in html and "Accepted" in html
    assert f'href="/decisions/respond/{token}/confirm?response=accepted">Accept the offer</a>' in html
    assert f'href="/decisions/respond/{token}/confirm?response=declined">Decline the offer</a>' in html
    assert "<form" not in html and 'name="csrf_token"' not in html
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert decision_row(sources, decision_id).response is None and event_count(sources) == 0


def test_the_confirmation_step_names_the_choice_and_records_nothing(sources, client, factory):
    institution = factory.institution("Makerere University")
    decision_id, token = make_decision(sources, factory, institution)
    with sources.app_context():
        application = db.session.get(Decision, decision_id).application
        program, cycle = application.program.name, application.cycle.name
    for _ in range(2):
        step = confirm_page(client, token, "declined")
        html = step.get_data(as_text=True)
        assert step.status_code == 200
        assert "Confirm your answer" in html and program in html and cycle in html
        assert "<strong>Decline the offer</strong>" in html and "What happens next" in html
        assert "it may be offered to someone else" in html
        assert f'<a class="btn btn-secondary" href="/decisions/respond/{token}">Go back</a>' in html
        assert f'action="/decisions/respond/{token}"' in html and 'name="response" value="declined"' in html
        assert "Confirm: Decline the offer</button>" in html and csrf_token(html)
        # Switching the language keeps the chosen answer.
        french = {f'href="/decisions/respond/{token}/confirm?{query}"'
                  for query in ("response=declined&amp;lang=fr", "lang=fr&amp;response=declined")}
        assert any(link in html for link in french)
        assert step.headers["Cache-Control"] == "no-store" and step.headers["Referrer-Policy"] == "no-referrer"
    assert decision_row(sources, decision_id).response is None and event_count(sources) == 0


@pytest.mark.parametrize("response", ["maybe", ""])
def test_the_confirmation_step_needs_one_of_the_two_answers(sources, client, factory, response):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution)
    step = confirm_page(client, token, response)
    assert step.status_code == 400 and "Choose one of the two answers." in step.get_data(as_text=True)
    assert decision_row(sources, decision_id).response is None and event_count(sources) == 0


def test_waitlisted_applicants_choose_to_stay_or_withdraw(sources, client, factory):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution, status="waitlisted")
    html = client.get(f"/decisions/respond/{token}").get_data(as_text=True)
    assert "Do you want to stay on the waiting list?" in html
    assert ">Stay on the waiting list</a>" in html and ">Withdraw my application</a>" in html
    assert "accept it" not in html and "Accept the offer" not in html
    confirm = confirm_page(client, token, "declined").get_data(as_text=True)
    assert "<strong>Withdraw my application</strong>" in confirm and "you leave the waiting list" in confirm
    assert answer(client, token, "declined").status_code == 302
    after = client.get(f"/decisions/respond/{token}").get_data(as_text=True)
    responded_at = decision_row(sources, decision_id).responded_at
    assert f"You withdrew your application on {shown_date(sources, institution, responded_at)}." in after


def test_a_double_submitted_confirmation_records_one_answer(sources, client, factory):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution)
    html = confirm_page(client, token, "accepted").get_data(as_text=True)
    form = {"response": "accepted", "csrf_token": csrf_token(html)}
    first = client.post(f"/decisions/respond/{token}", data=form)
    second = client.post(f"/decisions/respond/{token}", data=form)  # a double click, or the POST replayed
    assert first.status_code == second.status_code == 302
    assert len(events_of(sources, institution, "decision.responded")) == 1
    # Back to the confirmation page after answering: it shows the recorded answer instead.
    back = confirm_page(client, token, "declined")
    assert back.status_code == 302 and back.headers["Location"].endswith(f"/decisions/respond/{token}")
    assert decision_row(sources, decision_id).response == "accepted"


@pytest.mark.parametrize("choice", ["accepted", "declined"])
def test_answering_writes_the_response_event_and_delivery(sources, client, factory, receiver, choice):
    institution = factory.institution()
    secret = subscribe(sources, institution, receiver)
    decision_id, token = make_decision(sources, factory, institution)

    response = answer(client, token, choice)
    assert response.status_code == 302 and response.headers["Location"].endswith(f"/decisions/respond/{token}")

    decision = decision_row(sources, decision_id)
    assert decision.response == choice and decision.responded_at is not None
    expected = {"decision_id": decision_id, "submission_id": decision.application_id,
                "institution_id": institution.id, "response": choice,
                "responded_at": isoformat_z(decision.responded_at)}
    assert_written_and_delivered(sources, institution, "decision.responded", expected, secret, receiver)

    after = client.get(response.headers["Location"]).get_data(as_text=True)
    words = {"accepted": "You accepted the offer", "declined": "You declined the offer"}[choice]
    assert f"{words} on {shown_date(sources, institution, decision.responded_at)}." in after
    assert "To change your answer, contact" in after and "confirm?response=" not in after


def test_same_answer_again_is_idempotent_and_a_different_one_is_refused(sources, client, factory):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution)
    assert answer(client, token, "accepted").status_code == 302
    first = decision_row(sources, decision_id)

    # An answered decision shows no form any more: these are repeated or hand-made POSTs.
    other_form = f"/apply/{institution.id}"
    assert answer(client, token, "accepted", csrf_page=other_form).status_code == 302
    changed = answer(client, token, "declined", csrf_page=other_form)
    assert changed.status_code == 409
    shown = changed.get_data(as_text=True)
    assert "Your answer had already been recorded and cannot be changed from this link." in shown
    assert "You accepted the offer on" in shown
    again = decision_row(sources, decision_id)
    assert (again.response, again.responded_at) == ("accepted", first.responded_at)
    assert len(events_of(sources, institution, "decision.responded")) == 1
    assert audit_rows(sources, "public") == [
        (institution.id, "public", "decision.respond.accepted", decision_id, 302),
        (institution.id, "public", "decision.respond.accepted", decision_id, 302),
        (institution.id, "public", "decision.respond.declined", decision_id, 409),
    ]


@pytest.mark.parametrize("status, sent", [("accepted", False), ("rejected", True)])
def test_unsent_or_rejected_decisions_cannot_be_answered(sources, client, factory, status, sent):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution, status=status, sent=sent)
    page = client.get(f"/decisions/respond/{token}").get_data(as_text=True)
    assert "There is nothing to answer" in page and "confirm?response=" not in page
    assert confirm_page(client, token, "accepted").status_code == 409
    # The page offers no form; a hand-made POST with the session's valid CSRF token is refused all the same.
    refused = answer(client, token, "accepted", csrf_page=f"/apply/{institution.id}")
    assert refused.status_code == 409
    assert decision_row(sources, decision_id).response is None and event_count(sources) == 0


def test_a_replaced_decision_cannot_be_answered(sources, client, factory):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution, status="waitlisted")
    with sources.app_context():
        old = db.session.get(Decision, decision_id)
        old.application.decision = "accepted"
        db.session.add(Decision(institution_id=institution.id, application_id=old.application_id,
                                status="accepted", created_at=old.created_at + timedelta(seconds=1),
                                sent_at=utcnow()))
        db.session.commit()
    refused = answer(client, token, "accepted")
    assert refused.status_code == 409 and "replaced by a newer one" in refused.get_data(as_text=True)
    assert event_count(sources) == 0


def test_bad_answer_or_missing_csrf_changes_nothing(sources, client, factory):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution)
    assert answer(client, token, "maybe").status_code == 400
    assert answer(client, token, None).status_code == 400
    assert answer(client, token, "accepted", with_csrf=False).status_code == 400
    assert decision_row(sources, decision_id).response is None and event_count(sources) == 0


def test_forged_tampered_or_foreign_links_are_not_found(sources, client, factory):
    institution = factory.institution()
    decision_id, token = make_decision(sources, factory, institution)
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    other_key = URLSafeTimedSerializer("another-secret", salt="karibu.decision-response.v1").dumps(
        {"decision_id": decision_id})
    other_purpose = URLSafeTimedSerializer("test-secret-key", salt="another-purpose").dumps(
        {"decision_id": decision_id})
    for bad in (tampered, other_key, other_purpose, "garbage"):
        response = client.get(f"/decisions/respond/{bad}")
        assert response.status_code == 404
        assert "This link is not valid" in response.get_data(as_text=True)
        assert client.post(f"/decisions/respond/{bad}", data={"response": "accepted"}).status_code in (400, 404)
    assert decision_row(sources, decision_id).response is None


def test_links_expire_after_sixty_days(sources, client, factory, monkeypatch):
    institution = factory.institution()
    _, token = make_decision(sources, factory, institution)
    real_time = itsdangerous.timed.time.time
    monkeypatch.setattr(itsdangerous.timed.time, "time", lambda: real_time() + 59 * 86400)
    assert client.get(f"/decisions/respond/{token}").status_code == 200
    monkeypatch.setattr(itsdangerous.timed.time, "time", lambda: real_time() + 61 * 86400)
    expired = client.get(f"/decisions/respond/{token}")
    assert expired.status_code == 404 and "This link has expired" in expired.get_data(as_text=True)


def test_staff_can_record_the_answer_for_their_own_institution_only(sources, factory, receiver):
    institution, other = factory.institution(), factory.institution()
    secret = subscribe(sources, institution, receiver)
    decision_id, _ = make_decision(sources, factory, institution, status="deferred")
    with sources.app_context():
        with pytest.raises(NotFound):
            record_decision_response_by_staff(InstitutionScope(other.id), decision_id, "accepted", STAFF)
        decision, recorded = record_decision_response_by_staff(InstitutionScope(institution.id), decision_id,
                                                               "declined", STAFF)
        assert recorded is True
        expected = {"decision_id": decision_id, "submission_id": decision.application_id,
                    "institution_id": institution.id, "response": "declined",
                    "responded_at": isoformat_z(decision.responded_at)}
        with pytest.raises(Conflict):
            record_decision_response_by_staff(InstitutionScope(institution.id), decision_id, "accepted", STAFF)
    assert_written_and_delivered(sources, institution, "decision.responded", expected, secret, receiver)
