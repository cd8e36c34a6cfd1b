"""The bulk form's answers: a confirmation naming the change and the count before anything changes (htmx and
without JavaScript), used once, refusals that list the rows at fault with why and leave the selection alone, one sentence."""
import re

from sqlalchemy import func, select

from core.db import db
from core.models import Application, Event
from tests.portal.bulk_confirmation import confirmation_token, confirmed


def _text(response) -> str:
    return response.get_data(as_text=True)


def _sent(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Event).where(Event.type == "decision.sent"))


def _decisions(app, ids):
    with app.app_context():
        rows = db.session.execute(select(Application.id, Application.decision).where(Application.id.in_(ids)))
        return {row.id: row.decision for row in rows}


def test_sending_decisions_in_bulk_asks_first_naming_the_count(staff, factory, app):
    ids = [factory.application(staff.institution).id for _ in range(12)]
    change = {"ids": ids, "decision": "accepted", "send_decision": "true"}
    asked = staff.post("/applicants/bulk", change, htmx=True)
    html = _text(asked)
    assert asked.status_code == 200
    assert "<strong>Set the decision “Accepted” for 12 applicants?</strong>" in html
    assert "The decisions are then sent to the applicants." in html
    assert re.search(r'<button class="btn" type="submit" name="confirmation" value="[^"]+" data-confirm-change '
                     r'autofocus>Set the decision “Accepted” for 12 applicants</button>', html)
    assert '<button class="btn btn-secondary" type="submit" name="cancel" value="1">Cancel</button>' in html
    assert _sent(app) == 0 and set(_decisions(app, ids).values()) == {"none"}
    token = confirmation_token(asked)

    stale = staff.post("/applicants/bulk", {**change, "ids": ids[:11], "confirmation": token}, htmx=True)
    assert "Set the decision “Accepted” for 11 applicants?" in _text(stale) and _sent(app) == 0, \
        "a changed selection is asked again"
    assert "Confirm again: this change was already applied, or the selection" in _text(stale)
    other_change = staff.post("/applicants/bulk", {**change, "decision": "rejected", "confirmation": token}, htmx=True)
    assert "Set the decision “Rejected” for 12 applicants?" in _text(other_change) and _sent(app) == 0

    cancelled = staff.post("/applicants/bulk", {**change, "cancel": "1"}, htmx=True)
    assert "Nothing was changed or sent." in _text(cancelled) and _sent(app) == 0

    confirmed = staff.post("/applicants/bulk", {**change, "confirmation": token}, htmx=True)
    assert confirmed.status_code == 200
    assert ('role="status" tabindex="-1" autofocus data-bulk-done><p>12 of 12 selected applications changed.</p>'
            in _text(confirmed))
    assert _sent(app) == 12 and set(_decisions(app, ids).values()) == {"accepted"}

    again = staff.post("/applicants/bulk", {**change, "confirmation": token}, htmx=True)
    assert "Confirm again" in _text(again) and "changed.</p>" not in _text(again), "a token is used once"


def test_one_decision_is_asked_in_the_singular(staff, factory):
    application = factory.application(staff.institution, decision="accepted")
    html = _text(staff.post("/applicants/bulk", {"ids": [application.id], "send_decision": "true"}, htmx=True))
    assert "<strong>Send 1 decision?</strong>" in html and ">Send 1 decision</button>" in html
    assert "The decisions are then sent" not in html


def test_bulk_confirmation_without_javascript_is_a_page_that_returns_to_the_list(staff, factory, app):
    ids = [factory.application(staff.institution, decision="accepted").id for _ in range(3)]
    asked = staff.post("/applicants/bulk", {"ids": ids, "send_decision": "true"},
                       headers={"Referer": "http://localhost/applicants?decision=accepted"})
    page = _text(asked)
    assert asked.status_code == 200 and "<title>Confirm the bulk change" in page and "Send 3 decisions?" in page
    assert sorted(re.findall(r'<input type="hidden" name="ids" value="([^"]+)">', page)) == sorted(ids)
    assert '<input type="hidden" name="back" value="/applicants?decision=accepted">' in page
    assert 'form="bulk-confirm" data-confirm-change autofocus>Send 3 decisions</button>' in page
    assert _sent(app) == 0

    done = staff.post("/applicants/bulk", {"ids": ids, "send_decision": "true", "back": "/applicants?decision=accepted",
                                           "confirmation": confirmation_token(asked)},
                      headers={"Referer": "http://localhost/applicants/bulk"})
    assert done.status_code == 302 and done.headers["Location"] == "/applicants?decision=accepted"
    assert _sent(app) == 3
    assert "3 of 3 selected applications changed." in _text(staff.get("/applicants"))

    elsewhere = confirmed(staff, "/applicants/bulk", {"ids": ids, "stage": "interview", "back": "https://evil.example/"})
    assert elsewhere.status_code == 302 and elsewhere.headers["Location"] == "/applicants"


def test_a_change_that_cannot_be_made_is_refused_before_any_confirmation(staff, factory, app):
    decided = [factory.application(staff.institution, decision="accepted", first_name=f"Valid{n}") for n in range(3)]
    undecided = [factory.application(staff.institution, first_name=f"Undecided{n}", last_name="Nshuti")
                 for n in range(2)]
    ids = [a.id for a in decided + undecided]
    response = staff.post("/applicants/bulk", {"ids": ids, "send_decision": "true"}, htmx=True)
    html = _text(response)
    assert response.status_code == 400 and "Send 5 decisions?" not in html
    # One sentence, said once.
    assert "<p>Nothing was changed: 2 of 5 selected applications can&#39;t take this change.</p>" in html
    assert html.count("Nothing was changed") == 1
    # The rows at fault, by name, with why (a label, never a field name).
    problems = re.findall(r'<li><a href="#row-([^"]+)">([^<]+)</a>: ([^<]+)</li>', html)
    assert sorted(problems) == sorted((a.id, f"Undecided{n} Nshuti", "Send the decision: there is no decision to send yet.")
                                      for n, a in enumerate(undecided))
    assert "send_decision" not in html.replace('name="send_decision"', "")
    # Only the rows at fault are redrawn (still selected); the valid rows are left alone, so they stay selected.
    redrawn = re.findall(r'<tr id="row-([^"]+)" hx-swap-oob="true" class="has-error">', html)
    assert sorted(redrawn) == sorted(a.id for a in undecided)
    assert all(f'value="{a.id}" form="bulk"' not in html for a in decided)
    assert html.count(" checked") == 2
    assert _sent(app) == 0


def test_a_refusal_without_javascript_names_the_rows_in_the_message(staff, factory):
    decided = factory.application(staff.institution, decision="accepted")
    undecided = factory.application(staff.institution, first_name="Jean", last_name="Bosco")
    response = staff.post("/applicants/bulk", {"ids": [decided.id, undecided.id], "stage": "interview",
                                               "send_decision": "true"},
                          headers={"Referer": "http://localhost/applicants"})
    assert response.status_code == 302
    page = _text(staff.get("/applicants"))
    assert ("Nothing was changed: 1 of 2 selected applications can&#39;t take this change. "
            "Jean Bosco: Send the decision: there is no decision to send yet.") in page


def test_without_redis_a_confirmed_change_is_refused_whole(staff, factory, app, monkeypatch):
    from redis import RedisError

    import portal.applicants.listing

    class Unreachable:
        def set(self, *args, **kwargs):
            raise RedisError("connection refused")

    ids = [factory.application(staff.institution).id for _ in range(2)]
    change = {"ids": ids, "decision": "accepted"}
    token = confirmation_token(staff.post("/applicants/bulk", change, htmx=True))
    monkeypatch.setattr(portal.applicants.listing, "redis_connection", lambda: Unreachable())
    refused = staff.post("/applicants/bulk", {**change, "confirmation": token}, htmx=True)
    assert refused.status_code == 503 and "nothing was changed" in _text(refused)
    assert set(_decisions(app, ids).values()) == {"none"}


def test_a_change_that_leaves_every_row_as_it_was_says_why_and_is_not_a_success(staff, factory):
    ids = [factory.application(staff.institution, decision="accepted").id for _ in range(2)]
    same = confirmed(staff, "/applicants/bulk", {"ids": ids, "decision": "accepted"}, htmx=True)
    html = _text(same)
    assert ('<div class="alert alert-info" role="status" tabindex="-1" autofocus data-bulk-done><p>Nothing changed: '
            "the 2 selected applications were already with the chosen decision.</p>") in html
    assert "alert-ok" not in html and "0 of 2" not in html

    one = confirmed(staff, "/applicants/bulk", {"ids": ids[:1], "decision": "accepted"},
                    headers={"Referer": "http://localhost/applicants"})
    assert one.status_code == 302
    assert "Nothing changed: the selected application was already with the chosen decision." in _text(
        staff.get("/applicants"))


def test_a_change_that_leaves_some_rows_as_they_were_counts_them(staff, factory):
    changed = factory.application(staff.institution)
    unchanged = [factory.application(staff.institution) for _ in range(2)]
    confirmed(staff, "/applicants/bulk", {"ids": [a.id for a in unchanged], "stage": "interview"}, htmx=True)
    mixed = confirmed(staff, "/applicants/bulk", {"ids": [changed.id] + [a.id for a in unchanged],
                                                  "stage": "interview"}, htmx=True)
    assert ('<div class="alert alert-ok" role="status" tabindex="-1" autofocus data-bulk-done><p>1 of 3 selected '
            "applications changed; the 2 others were already at the chosen stage.</p>") in _text(mixed)
