"""Bulk stage and decision changes (all or nothing), sending a decision, CSV export of the filter."""
import csv
import io
import re

from sqlalchemy import select

from core.db import db
from core.models import Application, Event
from tests.portal.bulk_confirmation import confirmed


def _text(response) -> str:
    return response.get_data(as_text=True)


def _states(app, ids):
    with app.app_context():
        rows = db.session.execute(select(Application.id, Application.stage, Application.decision)
                                  .where(Application.id.in_(ids)))
        return {row.id: (row.stage, row.decision) for row in rows}


def test_bulk_change_updates_every_selected_row(staff, factory, app):
    inst = staff.institution
    chosen = [factory.application(inst) for _ in range(3)]
    untouched = factory.application(inst)
    ids = [a.id for a in chosen]

    response = confirmed(staff, "/applicants/bulk", {"ids": ids, "stage": "interview", "decision": "accepted"},
                         htmx=True)
    html = _text(response)
    assert response.status_code == 200
    assert "3 of 3 selected applications changed" in html
    assert html.count('hx-swap-oob="true"') == 3 and 'class="is-updated"' in html
    assert set(_states(app, ids).values()) == {("interview", "accepted")}
    assert _states(app, [untouched.id])[untouched.id] == ("submitted", "none")


def test_bulk_change_is_all_or_nothing_with_errors_beside_the_rows(staff, factory, app):
    inst = staff.institution
    good = factory.application(inst)
    undecided = factory.application(inst)
    decided = factory.application(inst, decision="accepted")
    response = staff.post("/applicants/bulk", {"ids": [good.id, undecided.id, decided.id], "send_decision": "true"},
                          htmx=True)
    html = _text(response)
    assert response.status_code == 400
    assert "Nothing was changed" in html
    rows = re.findall(r'<tr id="row-(app_[A-Za-z0-9]+)" hx-swap-oob="true" class="([^"]+)"', html)
    assert dict(rows)[undecided.id] == "has-error" and dict(rows)[good.id] == "has-error"
    assert "Send the decision: there is no decision to send yet." in html
    with app.app_context():
        assert db.session.scalar(select(Event.id).where(Event.type == "decision.sent")) is None


def test_bulk_change_rejects_unknown_stage_and_foreign_rows(staff, factory, app):
    mine = factory.application(staff.institution)
    foreign = factory.application(factory.institution())
    unknown = staff.post("/applicants/bulk", {"ids": [mine.id], "stage": "party"}, htmx=True)
    assert unknown.status_code == 400 and "Stage: this stage is not in your pipeline." in _text(unknown)
    response = staff.post("/applicants/bulk", {"ids": [mine.id, foreign.id], "stage": "interview"}, htmx=True)
    assert response.status_code == 400
    assert f'id="row-{foreign.id}"' not in _text(response), "nothing about a foreign row is shown"
    assert _states(app, [mine.id, foreign.id]) == {mine.id: ("submitted", "none"), foreign.id: ("submitted", "none")}


def test_bulk_change_needs_a_selection_and_a_change(staff, factory):
    application = factory.application(staff.institution)
    nothing_selected = staff.post("/applicants/bulk", {"stage": "interview"}, htmx=True)
    assert nothing_selected.status_code == 400 and "Select at least one applicant" in _text(nothing_selected)
    no_change = staff.post("/applicants/bulk", {"ids": [application.id]}, htmx=True)
    assert no_change.status_code == 400 and "Choose a stage or a decision" in _text(no_change)


def test_bulk_change_without_javascript_redirects_back_with_a_message(staff, factory):
    application = factory.application(staff.institution)
    response = confirmed(staff, "/applicants/bulk", {"ids": [application.id], "stage": "interview"},
                         headers={"Referer": "http://localhost/applicants?stage=submitted"})
    assert response.status_code == 302 and response.headers["Location"] == "/applicants?stage=submitted"
    assert "1 of 1 selected application changed." in _text(staff.get("/applicants"))


def test_send_decision_emits_the_event_and_shows_it(staff, factory, app):
    application = factory.application(staff.institution, decision="accepted")
    response = staff.post(f"/applicants/{application.id}/send-decision", {"confirm": "y"}, htmx=True)
    assert response.status_code == 200 and "The decision “Accepted” was sent to the applicant" in _text(response)
    with app.app_context():
        event = db.session.scalars(select(Event).where(Event.type == "decision.sent")).one()
    assert event.payload["decision_status"] == "accepted" and event.subject_id == application.id
    assert "Decision sent" in _text(staff.get(f"/applicants/{application.id}"))

    undecided = factory.application(staff.institution)
    refused = staff.post(f"/applicants/{undecided.id}/send-decision", htmx=True)
    assert refused.status_code == 400
    foreign = factory.application(factory.institution(), decision="accepted")
    assert staff.post(f"/applicants/{foreign.id}/send-decision", htmx=True).status_code == 400
    with app.app_context():
        assert db.session.scalar(select(Event.id).where(Event.subject_id == foreign.id)) is None


def test_export_streams_every_row_of_the_current_filter(staff, factory, app):
    inst = staff.institution
    program = factory.program(inst, name="BSc Nursing")
    cycle = factory.cycle(inst, programs=[program])
    paid = [factory.application(inst, program=program, cycle=cycle, paid=True, first_name="=cmd") for _ in range(60)]
    factory.application(inst, program=program, cycle=cycle, paid=False)
    factory.application(factory.institution(), paid=True)

    page = _text(staff.get("/applicants?paid=true"))
    link = re.search(r'id="export-link"[^>]*href="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert link == "/applicants/export.csv?paid=true"
    response = staff.get(link)
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(_text(response))))
    assert sorted(row["Application ID"] for row in rows) == sorted(a.id for a in paid)
    assert {row["Applicant"] for row in rows} == {"'=cmd Uwase"}

    partial = staff.get("/applicants?paid=false", htmx=True)
    assert '<span id="export-links" class="actions" hx-swap-oob="true">' in _text(partial)
    assert 'id="export-link" class="btn btn-secondary" href="/applicants/export.csv?paid=false"' in _text(partial)
