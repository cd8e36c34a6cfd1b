"""The applicant file: stage and decision edited in place, an honest "send decision", and one timeline of
everything that happened (with who did it), read through HTTP."""
import re
from datetime import timezone

from babel.dates import format_datetime
from sqlalchemy import func, select

from core.applications.credential_checks import record_check
from core.applications.decision_answers import record_decision_response
from core.applications.documents import document_storage
from core.db import db
from core.models import Application, Decision, Document, Event, utcnow
from core.models.history import ApplicationChange
from core.accounts.preferences import time_zone_of, zone_info
from core.scoping import InstitutionScope
from tests.conftest import auth_header


def _text(response) -> str:
    return response.get_data(as_text=True)


def _state(app, application_id):
    with app.app_context():
        application = db.session.get(Application, application_id)
        return application.stage, application.decision


def _history(app, application_id):
    with app.app_context():
        return [(row.kind, row.old_value, row.new_value, row.actor_kind, row.actor_name)
                for row in db.session.scalars(select(ApplicationChange)
                                              .where(ApplicationChange.application_id == application_id)
                                              .order_by(ApplicationChange.changed_at, ApplicationChange.id))]


def _timeline(html: str) -> list[tuple[str, str]]:
    """(kind, text) of each timeline entry, oldest first, tags stripped."""
    block = html[html.index('<div id="timeline"'):]
    block = block[:block.index("</ol>")]
    return [(kind, " ".join(re.sub(r"<[^>]+>", "", body).split()))
            for kind, body in re.findall(r'<li[^>]*data-kind="([a-z_]+)"[^>]*>(.*?)</li>', block, re.S)]


def test_the_file_edits_stage_and_decision_in_place_and_records_who(staff, factory, app):
    application = factory.application(staff.institution)
    page = _text(staff.get(f"/applicants/{application.id}"))
    assert 'hx-post="/applicants/%s/state"' % application.id in page
    assert '<label for="state-stage">Stage</label>' in page and '<label for="state-decision">Decision</label>' in page

    response = staff.post(f"/applicants/{application.id}/state", {"stage": "interview", "decision": "accepted"},
                          htmx=True)
    html = _text(response)
    assert response.status_code == 200
    assert 'role="status" tabindex="-1" autofocus><p>Saved.</p>' in html
    # The rest of the file follows: badges, the send button and the timeline, out of band.
    assert '<div id="file-badges" hx-swap-oob="true">' in html and "Interview" in html
    assert 'Send decision “Accepted” to the applicant' in html
    assert '<div id="timeline" hx-swap-oob="true">' in html
    assert _state(app, application.id) == ("interview", "accepted")
    assert sorted(_history(app, application.id)) == [
        ("decision", "none", "accepted", "staff", staff.user.email),
        ("stage", "submitted", "interview", "staff", staff.user.email)]

    again = staff.post(f"/applicants/{application.id}/state", {"stage": "interview", "decision": "accepted"},
                       htmx=True)
    assert "Nothing to change" in _text(again) and len(_history(app, application.id)) == 2


def test_in_place_edit_without_javascript_redirects_to_the_file(staff, factory, app):
    application = factory.application(staff.institution)
    response = staff.post(f"/applicants/{application.id}/state", {"stage": "completed", "decision": "waitlisted"})
    assert response.status_code == 302 and response.headers["Location"] == f"/applicants/{application.id}"
    assert "Saved." in _text(staff.get(f"/applicants/{application.id}"))
    assert _state(app, application.id) == ("completed", "waitlisted")


def test_in_place_edit_refuses_invalid_values_beside_the_field(staff, factory, app):
    application = factory.application(staff.institution)
    response = staff.post(f"/applicants/{application.id}/state", {"stage": "party", "decision": "none"}, htmx=True)
    html = _text(response)
    assert response.status_code == 400
    assert re.search(r'<select aria-describedby="state-stage-error" aria-invalid="true" autofocus id="state-stage"',
                     html)
    assert '<p class="error" id="state-stage-error">Stage: this stage is not in your pipeline.</p>' in html
    assert "stage_id" not in html and "updates[0]" not in html
    bad_decision = staff.post(f"/applicants/{application.id}/state", {"stage": "submitted", "decision": "maybe"},
                              htmx=True)
    assert bad_decision.status_code == 400 and "Decision: choose one of the listed decisions." in _text(bad_decision)
    assert _state(app, application.id) == ("submitted", "none") and _history(app, application.id) == []

    no_csrf = staff.post(f"/applicants/{application.id}/state", {"stage": "interview"}, htmx=True, csrf=False)
    assert no_csrf.status_code == 400 and _state(app, application.id) == ("submitted", "none")


def test_in_place_edit_of_another_institutions_application_is_not_found(staff, factory, app):
    foreign = factory.application(factory.institution())
    response = staff.post(f"/applicants/{foreign.id}/state", {"stage": "interview", "decision": "accepted"},
                          htmx=True)
    assert response.status_code == 404
    assert staff.get(f"/applicants/{foreign.id}").status_code == 404
    assert _state(app, foreign.id) == ("submitted", "none") and _history(app, foreign.id) == []


def test_sending_an_already_sent_decision_says_when_and_sends_nothing(staff, factory, app):
    application = factory.application(staff.institution, decision="accepted")
    first = staff.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"}, htmx=True)
    assert first.status_code == 200 and "The decision “Accepted” was sent to the applicant." in _text(first)
    with app.app_context():
        sent_at = db.session.scalar(select(Decision.sent_at).where(Decision.application_id == application.id))
        zone = zone_info(time_zone_of(InstitutionScope(staff.institution.id)))
    # As the page says it: in the institution's zone (a day later than UTC's late in the evening), day unpadded.
    when = format_datetime(sent_at.replace(tzinfo=timezone.utc), "d MMM y, HH:mm", tzinfo=zone, locale="en")

    again = staff.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"}, htmx=True)
    html = _text(again)
    assert again.status_code == 409
    assert "Nothing was sent: this decision was already sent on " + when in html
    assert "was sent to the applicant." not in html
    page = _text(staff.get(f"/applicants/{application.id}"))
    assert re.search(r'<button class="btn" type="button" disabled[^>]*>Decision “Accepted” already sent on '
                     + re.escape(when), page)
    assert 'action="/applicants/%s/send-decision"' % application.id not in page
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Event).where(Event.type == "decision.sent")) == 1

    no_js = staff.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"})
    assert no_js.status_code == 302
    assert "already sent on " + when in _text(staff.get(f"/applicants/{application.id}"))


def test_the_timeline_tells_everything_with_who_did_it(staff, factory, app, client):
    """Payment, a stage change through the API and in place, a sent and declined decision, its messages, a
    credential check and a document: all in one timeline, oldest first, even with the event outbox pruned."""
    inst = staff.institution
    application = factory.application(inst, paid=True)
    key, raw_key = factory.api_key(inst)
    api = client.patch("/api/v1/applications/update", headers=auth_header(raw_key),
                       json={"updates": [{"id": application.id, "stage": "documents_review"}]})
    assert api.status_code == 200
    staff.post(f"/applicants/{application.id}/state", {"stage": "interview", "decision": "accepted"}, htmx=True)
    assert staff.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"}, htmx=True).status_code == 200
    with app.app_context():
        scope = InstitutionScope(inst.id)
        decision_id = db.session.scalar(select(Decision.id).where(Decision.application_id == application.id))
        record_decision_response(decision_id, "declined")
        record_check(scope, application.id, issuer="NESA", level="A-Level",
                     answer={"result": "authentic", "record": {"id": "NESA-1", "candidate": {"full_name": "Aimée U"}}},
                     actor=staff.user.email)
        db.session.add(Document(institution_id=inst.id, application_id=application.id, kind="transcript",
                                filename="transcript.pdf", content_type="application/pdf", size=4,
                                sha256=document_storage().put(b"%PDF")))
        db.session.execute(Event.__table__.delete())  # the outbox is pruned after its retention period
        db.session.commit()

    entries = _timeline(_text(staff.get(f"/applicants/{application.id}")))
    kinds = [kind for kind, _ in entries]
    assert kinds[0] == "submitted" and "by the applicant" in entries[0][1]
    text = dict((kind, body) for kind, body in reversed(entries))  # first entry of each kind
    assert "payment" in kinds and "50,000 RWF via M-Pesa (Completed)" in text["payment"]
    stage_changes = [body for kind, body in entries if kind == "stage"]
    assert "Submitted → Documents review" in stage_changes[0] and f"through the API ({key.prefix})" in stage_changes[0]
    assert "Documents review → Interview" in stage_changes[1] and f"by {staff.user.email}" in stage_changes[1]
    assert "No decision → Accepted" in text["decision"] and f"by {staff.user.email}" in text["decision"]
    assert "Decision sent to the applicant: Accepted" in text["decision_sent"]
    assert "Applicant answered the decision: declined by the applicant" in text["decision_answered"]
    assert "message" in kinds and "Email" in text["message"]
    assert "NESA A-Level, Authentic (Aimée U)" in text["check"]
    assert "transcript.pdf" in text["document"]
    order = [kinds.index(kind) for kind in ("submitted", "stage", "decision", "decision_sent", "message",
                                            "decision_answered")]
    assert order == sorted(order)
    assert "No events yet" not in _text(staff.get(f"/applicants/{application.id}"))


def test_decisions_written_before_the_history_still_show(staff, factory, app):
    """Decisions in the table without history rows (older data, the demo seeder): made, sent and answered."""
    application = factory.application(staff.institution, decision="accepted")
    with app.app_context():
        now = utcnow()
        db.session.add(Decision(institution_id=staff.institution.id, application_id=application.id,
                                status="accepted", created_at=now, sent_at=now, response="declined",
                                responded_at=now))
        db.session.commit()
    kinds = [kind for kind, _ in _timeline(_text(staff.get(f"/applicants/{application.id}")))]
    assert kinds == ["submitted", "decision", "decision_sent", "decision_answered"]
