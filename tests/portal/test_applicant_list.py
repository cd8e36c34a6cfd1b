"""The applicant list: total count, sorts (and their cursors across ties), columns, saved views, the back link
and the change of all matching applications (inline and as an RQ job run by a real worker)."""
from __future__ import annotations

import html as html_lib
import re
from datetime import datetime, timedelta
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from rq import Queue, SimpleWorker
from sqlalchemy import select

from core.db import db, redis_connection
from core.institutions import pipeline
from core.models import Applicant, Application, AuditLog, BulkChange, Cycle, Decision, Program
from core.scoping import InstitutionScope
from core.applications.search_text import applicant_search_text
from tests.portal.bulk_confirmation import confirmation_token, confirmed

ROW_ID = re.compile(r'<tr id="row-(app_[A-Za-z0-9]+)"')
LOAD_MORE = re.compile(r'data-load-more href="([^"]+)"')


def _text(response) -> str:
    return response.get_data(as_text=True)


def _seed_ties(app, institution, count: int) -> list[dict]:
    """`count` applications in one transaction, with many ties on every sort key (same submission hour, same
    update minute, same name text, stages in turn)."""
    with app.app_context():
        scope = InstitutionScope(institution.id)
        stages = [stage.key for stage in pipeline(scope)]
        program = Program(institution_id=institution.id, name="BSc Ties")
        base = datetime(2026, 3, 1, 8, 0)
        cycle = Cycle(institution_id=institution.id, name="Intake Ties", opens_at=base - timedelta(days=30),
                      closes_at=base + timedelta(days=300), programs=[program])
        db.session.add_all([program, cycle])
        db.session.flush()
        rows = []
        for number in range(count):
            first, last, email = f"Name{number % 7}", "Tie", f"same{number % 3}@example.rw"
            applicant = Applicant(institution_id=institution.id, first_name=first, last_name=last, email=email,
                                  search_text=applicant_search_text(first, last, email))
            db.session.add(applicant)
            db.session.flush()
            application = Application(
                reference=f"TIE-2026-{number:05d}",
                institution_id=institution.id, applicant_id=applicant.id, program_id=program.id,
                cycle_id=cycle.id, stage=stages[number % len(stages)], decision="none", amount=0,
                submitted_at=base + timedelta(hours=number % 4), updated_at=base + timedelta(minutes=number % 5))
            db.session.add(application)
            db.session.flush()
            rows.append({"id": application.id, "applicant_id": applicant.id, "search_text": applicant.search_text,
                         "stage": stages.index(application.stage), "submitted_at": application.submitted_at,
                         "updated_at": application.updated_at})
        db.session.commit()
        return rows


def _walk(portal, url: str) -> list[str]:
    """Every row id of the list at `url`, following "load more" (htmx) to the end."""
    first = _text(portal.get(url))
    ids = ROW_ID.findall(first)
    more = LOAD_MORE.search(first)
    while more:
        page = _text(portal.get(html_lib.unescape(more.group(1)), htmx=True))
        ids += ROW_ID.findall(page)
        more = LOAD_MORE.search(page)
    return ids


def _expected(rows: list[dict], sort: str) -> list[str]:
    key, descending = sort.lstrip("-"), sort.startswith("-")
    if key == "stage":
        newest_first = sorted(rows, key=lambda row: (row["submitted_at"], row["id"]), reverse=True)
        return [row["id"] for row in sorted(newest_first, key=lambda row: row["stage"], reverse=descending)]
    order = {"submitted": lambda row: (row["submitted_at"], row["id"]),
             "updated": lambda row: (row["updated_at"], row["id"]),
             "name": lambda row: (row["search_text"], row["applicant_id"], row["id"])}[key]
    return [row["id"] for row in sorted(rows, key=order, reverse=descending)]


@pytest.mark.parametrize("sort", ["-submitted", "submitted", "-updated", "updated", "name", "-name", "stage",
                                  "-stage"])
def test_every_sort_walks_all_rows_in_order_across_ties(staff, app, sort):
    rows = _seed_ties(app, staff.institution, 123)
    ids = _walk(staff, f"/applicants?sort={quote(sort)}")
    assert len(ids) == len(set(ids)) == 123, "no row skipped or shown twice across pages"
    assert ids == _expected(rows, sort)


def test_newest_submission_first_by_default_and_sort_headers(staff, app):
    rows = _seed_ties(app, staff.institution, 60)
    page = staff.get("/applicants")
    html = _text(page)
    assert ROW_ID.findall(html) == _expected(rows, "-submitted")[:50]
    assert re.search(r'<th scope="col" class="hide-narrow" aria-sort="descending">\s*<a class="sort-link" '
                     r'href="/applicants\?sort=submitted"', html), "the sorted column says so and flips"
    assert 'href="/applicants?sort=name"' in html and 'href="/applicants?sort=-updated"' not in html
    assert '<option value="-submitted" selected>' in html, "the no-JavaScript sort menu shows the sort"
    by_name = staff.get("/applicants?sort=name&stage=submitted", htmx=True)
    assert by_name.headers["HX-Push-Url"] == "/applicants?stage=submitted&sort=name"
    assert 'aria-sort="ascending"' in _text(by_name)
    assert staff.get("/applicants?sort=shoe-size").status_code == 200, "an unknown sort falls back to the default"


def test_a_cursor_is_bound_to_its_sort(staff, app):
    _seed_ties(app, staff.institution, 60)
    more = html_lib.unescape(LOAD_MORE.search(_text(staff.get("/applicants?sort=name"))).group(1))
    cursor = parse_qs(urlsplit(more).query)["cursor"][0]
    assert staff.get(f"/applicants?sort=name&cursor={cursor}", htmx=True).status_code == 200
    other = staff.get(f"/applicants?sort=-name&cursor={cursor}", htmx=True)
    assert other.status_code == 400 and "cursor does not match" in _text(other)


def test_total_count_above_the_table_in_a_status_region(staff, factory, app):
    inst = staff.institution
    program = factory.program(inst)
    cycle = factory.cycle(inst, programs=[program])
    base = datetime(2026, 3, 1, 8, 0)
    for number in range(7):
        factory.application(inst, program=program, cycle=cycle, first_name=f"Count{number}",
                            stage="interview" if number < 3 else "submitted", paid=number == 0,
                            submitted_at=base + timedelta(days=number))
    factory.application(factory.institution())  # another institution's row is never counted

    html = _text(staff.get("/applicants"))
    assert '<p id="result-count" class="result-count" role="status">7 applicants match</p>' in html
    assert re.search(r'<div id="results"[^>]*>', html) and "aria-live" not in re.search(
        r'<div id="results"[^>]*>', html).group(0), "the table is not a live region"

    counted = {"stage=interview": "3 applicants match", "stage=interview&paid=true": "1 applicant matches",
               f"cycle={cycle.id}&decision=none": "7 applicants match", "q=count4": "1 applicant matches",
               "submitted_after=2026-03-03&submitted_before=2026-03-06": "3 applicants match",
               "q=nobody-at-all": "0 applicants match"}
    for query, sentence in counted.items():
        partial = _text(staff.get(f"/applicants?{query}", htmx=True))
        assert f'<p id="result-count" hx-swap-oob="innerHTML">{sentence}</p>' in partial, query


def test_columns_are_chosen_and_kept_in_every_link(staff, app):
    _seed_ties(app, staff.institution, 55)
    html = _text(staff.get("/applicants?columns=stage,updated&sort=name"))
    headers = re.findall(r'<th scope="col"[^>]*>\s*(?:<a[^>]*>)?([^<]+)', html)
    assert [header.strip() for header in headers] == ["Applicant", "Stage", "Last update"]
    first_row = re.search(r'<tr id="row-.*?</tr>', html, re.S).group(0)
    assert first_row.count("<td") == 4
    assert re.search(r'name="columns" value="program" aria-label="Program column">', html)
    assert re.search(r'name="columns" value="stage" aria-label="Stage column" checked>', html)
    more = html_lib.unescape(LOAD_MORE.search(html).group(1))
    assert parse_qs(urlsplit(more).query)["columns"] == ["stage,updated"]
    rows = _text(staff.get(more, htmx=True))
    assert re.search(r'<tr id="row-.*?</tr>', rows, re.S).group(0).count("<td") == 4

    # The form sends one value per ticked box plus an empty one: none ticked shows only the applicant.
    bare = staff.get("/applicants?columns=&sort=", htmx=True)
    assert bare.headers["HX-Push-Url"] == "/applicants?columns="
    assert re.search(r'<tr id="row-.*?</tr>', _text(bare), re.S).group(0).count("<td") == 2
    default = staff.get("/applicants?columns=&columns=program&columns=cycle&columns=stage&columns=decision"
                        "&columns=paid&columns=enrolled&columns=submitted", htmx=True)
    assert default.headers["HX-Push-Url"] == "/applicants", "the default columns need no parameter"


def test_saved_views_are_per_user_saved_opened_and_deleted(staff, portal_as, app):
    colleague = portal_as("staff", institution=staff.institution)
    saved = staff.post("/applicants/views", {"name": "  Interviews   by name ",
                                              "query": "stage=interview&sort=name&columns=stage&junk=1"}, htmx=True)
    html = _text(saved)
    assert saved.status_code == 200 and "The view “Interviews by name” was saved." in html
    assert 'href="/applicants?stage=interview&amp;sort=name&amp;columns=stage">Interviews by name</a>' in html
    assert "Interviews by name" in _text(staff.get("/applicants"))
    assert "Interviews by name" not in _text(colleague.get("/applicants")), "views are the user's own"

    again = staff.post("/applicants/views", {"name": "Interviews by name", "query": "stage=offer"})
    assert again.status_code == 302 and again.headers["Location"] == "/applicants?stage=offer"
    page = _text(staff.get("/applicants"))
    assert page.count(">Interviews by name</a>") == 1 and 'href="/applicants?stage=offer">' in page

    view_id = re.search(r'/applicants/views/(view_[A-Za-z0-9]+)/delete', page).group(1)
    assert colleague.post(f"/applicants/views/{view_id}/delete", htmx=True).status_code == 404
    deleted = staff.post(f"/applicants/views/{view_id}/delete", htmx=True)
    assert deleted.status_code == 200 and "The view “Interviews by name” was deleted." in _text(deleted)
    assert "Interviews by name</a>" not in _text(staff.get("/applicants"))
    nameless = staff.post("/applicants/views", {"name": " ", "query": ""}, htmx=True)
    assert nameless.status_code == 400
    with app.app_context():
        actions = list(db.session.scalars(select(AuditLog.action).where(
            AuditLog.institution_id == staff.institution.id, AuditLog.action.like("saved_view.%"))
            .order_by(AuditLog.id)))
    assert actions == ["saved_view.save", "saved_view.save", "saved_view.delete"]


def test_the_file_links_back_to_the_list_as_it_was(staff, factory):
    application = factory.application(staff.institution, stage="interview")
    html = _text(staff.get("/applicants?stage=interview&sort=name&columns=stage"))
    link = html_lib.unescape(re.search(rf'href="(/applicants/{application.id}\?back=[^"]+)"', html).group(1))
    back = parse_qs(urlsplit(link).query)["back"][0]
    assert back == "/applicants?stage=interview&sort=name&columns=stage"
    detail = _text(staff.get(link))
    assert f'<a href="{html_lib.escape(back)}">← Back to the applicants</a>' in detail
    for hostile in ("https://evil.example/applicants", "//evil.example/applicants", "/users?x=1"):
        page = _text(staff.get(f"/applicants/{application.id}?back={quote(hostile)}"))
        assert '<a href="/applicants">← All applicants</a>' in page, hostile


def _states(app, ids):
    with app.app_context():
        return {row.id: (row.stage, row.decision) for row in db.session.execute(
            select(Application.id, Application.stage, Application.decision).where(Application.id.in_(ids)))}


def test_a_small_matching_set_changes_inline_and_is_audited(staff, factory, app):
    inst = staff.institution
    program = factory.program(inst)
    cycle = factory.cycle(inst, programs=[program])
    chosen = [factory.application(inst, program=program, cycle=cycle, stage="submitted") for _ in range(3)]
    other = factory.application(inst, program=program, cycle=cycle, stage="committee_review")
    response = confirmed(staff, "/applicants/bulk-matching", {"matching": "stage=submitted&sort=name",
                                                              "stage": "interview"}, htmx=True)
    assert response.status_code == 200
    assert "3 of the 3 matching applications changed." in _text(response)
    assert set(_states(app, [a.id for a in chosen]).values()) == {("interview", "none")}
    assert _states(app, [other.id])[other.id] == ("committee_review", "none")
    with app.app_context():
        target = db.session.scalar(select(AuditLog.target).where(
            AuditLog.action == "applicants.bulk_update_matching"))
    assert re.fullmatch(r"bulk_[A-Za-z0-9]+: 3 matching stage=submitted", target)
    nothing = staff.post("/applicants/bulk-matching", {"matching": "stage=submitted", "stage": "interview"},
                         htmx=True)
    assert nothing.status_code == 400 and "No applicants match these filters" in _text(nothing)


def test_each_batch_is_all_or_nothing(staff, factory, app, monkeypatch):
    import core.applications.matching_updates
    monkeypatch.setattr(core.applications.matching_updates, "BATCH_SIZE", 2)
    inst = staff.institution
    program = factory.program(inst)
    cycle = factory.cycle(inst, programs=[program])
    rows = [factory.application(inst, program=program, cycle=cycle, decision=decision)
            for decision in ("accepted", "none", "accepted", "accepted", "rejected", "accepted")]
    by_id = sorted(rows, key=lambda row: row.id)
    batches = [by_id[index:index + 2] for index in range(0, 6, 2)]
    refused = [batch for batch in batches if any(row.decision == "none" for row in batch)]
    question = staff.post("/applicants/bulk-matching", {"matching": "", "send_decision": "y"}, htmx=True)
    assert "Send 6 decisions?" in _text(question)
    response = staff.post("/applicants/bulk-matching", {"matching": "", "send_decision": "y",
                                                        "confirmation": confirmation_token(question)}, htmx=True)
    assert response.status_code == 200
    sentence = _text(response)
    assert "were left unchanged (their batch failed a check: cannot send: the application has no decision)" \
        in sentence
    with app.app_context():
        sent_ids = set(db.session.scalars(select(Decision.application_id).where(Decision.sent_at.is_not(None))))
    refused_ids = {row.id for batch in refused for row in batch}
    assert sent_ids == {row.id for row in rows} - refused_ids, "a refused batch changes nothing at all"


def test_a_large_matching_set_runs_as_a_job_with_progress(staff, factory, app, redis_client, monkeypatch):
    monkeypatch.setitem(app.config, "BULK_CHANGE_INLINE_LIMIT", 2)
    redis_client.flushdb()
    inst = staff.institution
    program = factory.program(inst)
    cycle = factory.cycle(inst, programs=[program])
    chosen = [factory.application(inst, program=program, cycle=cycle, paid=True) for _ in range(5)]
    unpaid = factory.application(inst, program=program, cycle=cycle)

    response = confirmed(staff, "/applicants/bulk-matching", {
        "matching": "paid=true&columns=stage", "stage": "committee_review", "decision": "waitlisted"}, htmx=True)
    html = _text(response)
    assert response.status_code == 200 and "Waiting for a worker to change 5 matching applicants" in html
    poll = html_lib.unescape(re.search(r'hx-get="([^"]+)" hx-trigger="every 1s"', html).group(1))
    assert set(_states(app, [a.id for a in chosen]).values()) == {("submitted", "none")}, "nothing yet"
    with app.app_context():
        job_queue = Queue("default", connection=redis_connection())
        [job] = job_queue.get_jobs()
        assert job.func_name == "jobs.bulk_changes.apply_bulk_change" and job.timeout == 3 * 3600
        SimpleWorker([job_queue], connection=redis_connection()).work(burst=True)

    done = staff.get(poll, htmx=True)
    assert "5 of the 5 matching applications changed." in _text(done)
    assert "every 1s" not in _text(done), "polling stops when the change is done"
    assert 'href="/applicants?paid=true&amp;columns=stage">Show the updated list</a>' in _text(done)
    assert ('hx-get="/applicants?paid=true&amp;columns=stage" hx-trigger="load" hx-target="#results"' in _text(done)
            and "data-bulk-done" in _text(done)), "once done, the list page draws its table again"
    assert set(_states(app, [a.id for a in chosen]).values()) == {("committee_review", "waitlisted")}
    assert _states(app, [unpaid.id])[unpaid.id] == ("submitted", "none")
    change_id = re.search(r"/applicants/bulk-changes/(bulk_[A-Za-z0-9]+)", poll).group(1)
    with app.app_context():
        bulk = db.session.get(BulkChange, change_id)
        assert (bulk.status, bulk.total, bulk.done, bulk.changed, bulk.refused) == ("done", 5, 5, 5, 0)
    full_page = staff.get(f"/applicants/bulk-changes/{change_id}")
    assert full_page.status_code == 200 and "<html" in _text(full_page)
    redis_client.flushdb()


def test_another_institution_cannot_see_a_bulk_change(staff, portal_as, factory):
    factory.application(staff.institution)
    response = confirmed(staff, "/applicants/bulk-matching", {"matching": "", "stage": "interview"}, htmx=True)
    change_id = re.search(r"bulk_[A-Za-z0-9]+", _text(response)).group(0)
    stranger = portal_as("staff")
    assert stranger.get(f"/applicants/bulk-changes/{change_id}").status_code == 404


def test_searches_are_counted_up_to_a_cap(staff, factory, monkeypatch):
    import portal.applicants.listing
    import portal.applicants.views
    monkeypatch.setattr(portal.applicants.listing, "COUNT_CAP", 2)
    monkeypatch.setattr(portal.applicants.views, "COUNT_CAP", 2)
    for number in range(3):
        factory.application(staff.institution, first_name=f"Capped{number}")
    factory.application(staff.institution, first_name="Other")
    searched = _text(staff.get("/applicants?q=capped", htmx=True))
    assert '<p id="result-count" hx-swap-oob="innerHTML">More than 2 applicants match</p>' in searched
    assert "Select all applicants matching the filters" in searched
    counted = _text(staff.get("/applicants?stage=submitted", htmx=True))
    assert '<p id="result-count" hx-swap-oob="innerHTML">4 applicants match</p>' in counted, \
        "the counters need no cap"
