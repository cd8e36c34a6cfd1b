"""application.submitted from the public apply form (and from staff, through the core function)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from core.applications.applying import ApplicantFields, submit_application
from core.errors import InvalidInput
from core.db import db
from core.models import Applicant, Application, Event, Institution, Stage, utcnow
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z
from tests.events.sources.conftest import (
    assert_written_and_delivered, audit_rows, csrf_token, events_of, subscribe,
)
from tests.webhooks.conftest import queued_jobs


def open_cycle_with_programs(factory, institution):
    offered = factory.program(institution, name="BSc Nursing", fee="45000", currency="RWF")
    other = factory.program(institution, name="BA Law")
    cycle = factory.cycle(institution, programs=[offered], name="September intake")
    return cycle, offered, other


def form_fields(client, institution, **overrides) -> dict:
    page = client.get(f"/apply/{institution.id}")
    assert page.status_code == 200
    fields = {"csrf_token": csrf_token(page.get_data(as_text=True)), "first_name": "  Aimée ",
              "last_name": "Uwimana", "email": "Aimee.Uwimana@Example.com", "phone": "+250 788 123 456"}
    fields.update(overrides)
    return fields


def count(app, model) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model))


def test_form_lists_only_open_cycles_and_their_programs(client, factory):
    institution = factory.institution("Kigali University")
    cycle, offered, _ = open_cycle_with_programs(factory, institution)
    now = utcnow()
    closed = factory.cycle(institution, programs=[offered], name="Last year",
                           opens_at=now - timedelta(days=400), closes_at=now - timedelta(days=30))
    upcoming = factory.cycle(institution, programs=[offered], name="Next year",
                             opens_at=now + timedelta(days=30), closes_at=now + timedelta(days=90))
    html = client.get(f"/apply/{institution.id}").get_data(as_text=True)
    assert "Apply to Kigali University" in html
    assert f'value="{cycle.id}"' in html and f'value="{offered.id}"' in html
    assert closed.id not in html and upcoming.id not in html and "BA Law" not in html


def test_submitting_the_form_writes_application_event_and_delivery(sources, client, factory, receiver):
    institution = factory.institution()
    secret = subscribe(sources, institution, receiver, include_name=True)
    cycle, program, _ = open_cycle_with_programs(factory, institution)
    fields = form_fields(client, institution, cycle_id=cycle.id, program_id=program.id)

    response = client.post(f"/apply/{institution.id}", data=fields)
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"/apply/{institution.id}/submitted")

    with sources.app_context():
        application = db.session.scalars(select(Application).where(
            Application.institution_id == institution.id)).one()
        applicant, reference = application.applicant, application.reference
        assert (applicant.first_name, applicant.last_name, applicant.email, applicant.phone) == (
            "Aimée", "Uwimana", "aimee.uwimana@example.com", "+250788123456")
        assert applicant.search_text == "aimee uwimana aimee.uwimana@example.com"
        assert (application.stage, application.decision, application.paid, application.submitted_by_staff) == (
            "submitted", "none", False, False)
        assert (str(application.amount), application.currency) == ("45000.00", "RWF")
        expected = {
            "submission_id": application.id, "admission_id": applicant.id, "institution_id": institution.id,
            "program_id": program.id, "cycle_id": cycle.id, "campus_id": None, "stage_id": "submitted",
            "submitted_at": isoformat_z(application.submitted_at), "submitted_by_staff": False,
            "applicant": {"first_name": "Aimée", "last_name": "Uwimana"},
        }
    assert_written_and_delivered(sources, institution, "application.submitted", expected, secret, receiver)

    confirmation = client.get(response.headers["Location"]).get_data(as_text=True)
    assert f"<code>{reference}</code>" in confirmation and "aimee.uwimana@example.com" in confirmation


def test_applicant_name_is_left_out_unless_the_endpoint_includes_it(sources, client, factory, receiver):
    institution = factory.institution()
    subscribe(sources, institution, receiver)
    cycle, program, _ = open_cycle_with_programs(factory, institution)
    client.post(f"/apply/{institution.id}", data=form_fields(client, institution, cycle_id=cycle.id,
                                                             program_id=program.id))
    [event] = events_of(sources, institution, "application.submitted")
    assert event.payload["applicant"] is None


def test_first_stage_of_the_institutions_pipeline_is_used(sources, client, factory):
    institution = factory.institution()
    with sources.app_context():
        db.session.get(Stage, (institution.id, "submitted")).position = 10
        db.session.commit()
    cycle, program, _ = open_cycle_with_programs(factory, institution)
    client.post(f"/apply/{institution.id}", data=form_fields(client, institution, cycle_id=cycle.id,
                                                             program_id=program.id))
    [event] = events_of(sources, institution, "application.submitted")
    assert event.payload["stage_id"] == "documents_review"


@pytest.mark.parametrize("override, field_error", [
    ({"program_id": "OTHER"}, "Program: This program is not offered in the chosen admission cycle."),
    ({"cycle_id": "CLOSED"}, "Admission cycle: This admission cycle is no longer open for applications"),
    ({"cycle_id": "cyc_missing"}, "Admission cycle: Choose one of the options in the list."),
    ({"email": "not-an-email"}, "Email: Enter an email address such as name@example.com."),
    ({"phone": "call me"}, "Phone: Enter a phone number of 7 to 15 digits"),
    ({"first_name": "   "}, "First name: This is required."),
    ({"last_name": ""}, "Last name: This is required."),
])
def test_invalid_submissions_write_nothing_and_say_why(sources, client, factory, override, field_error):
    institution = factory.institution()
    cycle, program, other = open_cycle_with_programs(factory, institution)
    now = utcnow()
    closed = factory.cycle(institution, programs=[program], opens_at=now - timedelta(days=90),
                           closes_at=now - timedelta(days=1))
    values = {"OTHER": other.id, "CLOSED": closed.id}
    chosen = {"cycle_id": cycle.id, "program_id": program.id}
    chosen.update({key: values.get(value, value) for key, value in override.items()})
    fields = form_fields(client, institution, **chosen)
    response = client.post(f"/apply/{institution.id}", data=fields)
    assert response.status_code == 400
    assert field_error in response.get_data(as_text=True)
    assert 'aria-invalid="true"' in response.get_data(as_text=True)
    assert count(sources, Application) == count(sources, Applicant) == count(sources, Event) == 0
    assert queued_jobs(sources) == 0


@pytest.mark.parametrize("override", [{"last_name": "Uwi\x00mana"}, {"cycle_id": "cyc_\x00"}])
def test_a_nul_in_a_field_is_refused_at_the_edge_and_writes_nothing(sources, client, factory, override):
    institution = factory.institution()
    cycle, program, _ = open_cycle_with_programs(factory, institution)
    fields = form_fields(client, institution, **{"cycle_id": cycle.id, "program_id": program.id, **override})
    response = client.post(f"/apply/{institution.id}", data=fields)
    assert response.status_code == 400
    assert "must be text (UTF-8) without NUL characters" in response.get_data(as_text=True)
    assert count(sources, Application) == count(sources, Applicant) == count(sources, Event) == 0
    assert queued_jobs(sources) == 0


def test_a_second_application_for_the_same_program_and_cycle_is_refused(sources, client, factory):
    institution = factory.institution()
    cycle, program, _ = open_cycle_with_programs(factory, institution)
    first = client.post(f"/apply/{institution.id}", data=form_fields(client, institution, cycle_id=cycle.id,
                                                                     program_id=program.id))
    assert first.status_code == 302
    again = client.post(f"/apply/{institution.id}", data=form_fields(
        client, institution, cycle_id=cycle.id, program_id=program.id, email="AIMEE.uwimana@example.com"))
    assert again.status_code == 409
    assert ("Email: You have already applied to this program in this cycle with this email address."
            in again.get_data(as_text=True))
    assert count(sources, Application) == 1 and len(events_of(sources, institution, "application.submitted")) == 1
    with sources.app_context():
        application_id = db.session.scalar(select(Application.id))
    assert audit_rows(sources, "public") == [
        (institution.id, "public", "application.submit", application_id, 302),
        (institution.id, "public", "application.submit", "", 409),
    ]


def test_csrf_token_is_required(sources, client, factory):
    institution = factory.institution()
    cycle, program, _ = open_cycle_with_programs(factory, institution)
    fields = form_fields(client, institution, cycle_id=cycle.id, program_id=program.id)
    del fields["csrf_token"]
    response = client.post(f"/apply/{institution.id}", data=fields)
    assert response.status_code == 400
    assert count(sources, Application) == 0 and count(sources, Event) == 0


def test_unknown_or_disabled_institution_is_not_found(sources, client, factory):
    assert client.get("/apply/ins_missing").status_code == 404
    assert client.get("/apply/ins_%00").status_code == 400  # refused at the edge (tests/ops/test_input_guard.py)
    institution = factory.institution()
    with sources.app_context():
        db.session.get(Institution, institution.id).status = "disabled"
        db.session.commit()
    assert client.get(f"/apply/{institution.id}").status_code == 404


def test_institution_without_open_cycles_says_so(client, factory):
    institution = factory.institution()
    html = client.get(f"/apply/{institution.id}").get_data(as_text=True)
    assert "Applications are not open right now" in html and "<form" not in html.split("<main", 1)[1]


def test_public_form_posts_are_rate_limited_per_address(sources, client, factory, monkeypatch):
    monkeypatch.setitem(sources.config, "PUBLIC_FORM_RATE_LIMIT", "2/minute")
    institution = factory.institution()
    cycle, program, _ = open_cycle_with_programs(factory, institution)
    statuses = [client.post(f"/apply/{institution.id}", data=form_fields(
        client, institution, cycle_id=cycle.id, program_id=program.id, email=f"a{n}@example.com"),
        environ_base={"REMOTE_ADDR": "198.51.100.7"}).status_code for n in range(3)]
    assert statuses == [302, 302, 429]
    assert client.get(f"/apply/{institution.id}", environ_base={"REMOTE_ADDR": "198.51.100.7"}).status_code == 200


def test_staff_submission_is_marked_and_emitted(sources, factory, receiver):
    institution = factory.institution()
    secret = subscribe(sources, institution, receiver)
    cycle, program, other = open_cycle_with_programs(factory, institution)
    with sources.app_context():
        application = submit_application(InstitutionScope(institution.id), program.id, cycle.id,
                                         ApplicantFields("Jean", "Mugisha", "jean@example.com"),
                                         submitted_by_staff=True)
        assert application.applicant.phone is None
        expected = {
            "submission_id": application.id, "admission_id": application.applicant_id,
            "institution_id": institution.id, "program_id": program.id, "cycle_id": cycle.id,
            "campus_id": None, "stage_id": "submitted", "submitted_at": isoformat_z(application.submitted_at),
            "submitted_by_staff": True, "applicant": None,
        }
        with pytest.raises(InvalidInput) as refused:
            submit_application(InstitutionScope(institution.id), other.id, cycle.id,
                               ApplicantFields("Jean", "Mugisha", "jean@example.com"), submitted_by_staff=True)
        assert [(e["location"], e["name"]) for e in refused.value.errors] == [("body", "program_id")]
    assert_written_and_delivered(sources, institution, "application.submitted", expected, secret, receiver)


def test_a_mistyped_form_address_answers_the_applicant_in_their_language(client, factory):
    institution = factory.institution("Université du Burundi")
    for path in (f"/apply/{institution.id}x", f"/apply/{institution.id}x/submitted"):
        page = client.get(path, headers={"Accept-Language": "fr-FR,fr;q=0.9"})
        html = page.get_data(as_text=True)
        assert page.status_code == 404, path
        assert '<html lang="fr">' in html
        assert "<h1 id=\"not-found-title\">Ce formulaire de candidature est introuvable</h1>" in html
        assert "Karibu" not in html and "sign-in" not in html and "/login" not in html
        assert "Université du Burundi" not in html
    swahili = client.get(f"/apply/{institution.id}x?lang=sw").get_data(as_text=True)
    assert "Fomu hii ya maombi haikupatikana" in swahili
    english = client.get(f"/apply/{institution.id}x").get_data(as_text=True)
    assert "This application form was not found" in english and "Go to sign-in" not in english
