"""Each page as a full page and as its htmx partial; data scoped to the signed-in user's institution."""
import re
from datetime import datetime, timedelta

from sqlalchemy import select

from core.applications.documents import document_storage
from core.db import db
from core.models import AuditLog, Document, Event, utcnow
from tests.openapi_check import assert_conforms


def _text(response) -> str:
    return response.get_data(as_text=True)


def _is_full_page(response) -> bool:
    return _text(response).lstrip().startswith("<!doctype html>")


def test_dashboard_counts_the_current_cycle_and_draws_a_chart(staff, factory):
    inst = staff.institution
    program = factory.program(inst)
    now = utcnow()
    cycle = factory.cycle(inst, programs=[program], name="Intake 2026", opens_at=now - timedelta(days=3),
                          closes_at=now + timedelta(days=20))
    old = factory.cycle(inst, programs=[program], name="Intake 2025", opens_at=now - timedelta(days=400),
                        closes_at=now - timedelta(days=300))
    factory.application(inst, program=program, cycle=cycle, paid=True, stage="interview",
                        submitted_at=now - timedelta(days=2))
    factory.application(inst, program=program, cycle=cycle, decision="accepted", enrolled=True,
                        submitted_at=now - timedelta(days=2))
    factory.application(inst, program=program, cycle=cycle, submitted_at=now - timedelta(days=1))
    factory.application(inst, program=program, cycle=old, submitted_at=now - timedelta(days=350))

    response = staff.get("/dashboard")
    html = _text(response)
    assert response.status_code == 200 and _is_full_page(response)
    assert "Intake 2026" in html
    assert re.search(r"<dt>Applications</dt><dd>3</dd>", html)
    assert "33% <small>1 of 3</small>" in html  # paid share and enrolled share
    assert re.search(r'href="/applicants\?cycle=[^"]+&amp;stage=interview">Interview<span class="visually-hidden">: 1 application</span></a>', html)
    assert html.count('<rect class="bar"') == 4  # opened 3 days ago: four days drawn
    assert "3 applications from" in html
    assert response.headers["Vary"] == "HX-Request" or "HX-Request" in response.headers["Vary"]

    partial = staff.get(f"/dashboard?cycle={old.id}", htmx=True)
    assert partial.status_code == 200 and not _is_full_page(partial)
    assert re.search(r"<dt>Applications</dt><dd>1</dd>", _text(partial))


def test_dashboard_without_cycles_says_so(staff):
    assert "No admission cycle yet" in _text(staff.get("/dashboard"))


def test_applicants_table_filters_search_and_load_more(staff, factory):
    inst = staff.institution
    program = factory.program(inst, name="BSc Nursing")
    cycle = factory.cycle(inst, programs=[program], name="Intake A")
    base = datetime(2026, 3, 1, 8, 0)
    created = [factory.application(inst, program=program, cycle=cycle, first_name=f"Person{i:02d}",
                                   last_name="Mugisha", submitted_at=base + timedelta(hours=i),
                                   paid=i % 2 == 0) for i in range(55)]
    factory.application(inst, program=program, cycle=cycle, first_name="Aimée", last_name="Uwase",
                        submitted_at=base + timedelta(days=10))

    page = staff.get("/applicants")
    html = _text(page)
    assert page.status_code == 200 and _is_full_page(page)
    assert html.count('name="ids"') == 50
    assert "Load more" in html
    assert "Aimée" in html, "newest submission first"
    more = re.search(r'hx-get="(/applicants\?cursor=[^"]+)"', html).group(1).replace("&amp;", "&")

    rows = staff.get(more, htmx=True)
    assert rows.status_code == 200 and not _is_full_page(rows)
    assert _text(rows).count('name="ids"') == 6
    assert "Load more" not in _text(rows)
    assert created[0].id in _text(rows), "the oldest come last"

    search = staff.get("/applicants?q=aimee&cycle=&stage=", htmx=True)
    assert search.status_code == 200 and not _is_full_page(search)
    assert _text(search).count('name="ids"') == 1 and "Uwase" in _text(search)
    assert search.headers["HX-Push-Url"] == "/applicants?q=aimee"
    assert "HX-Request" in search.headers["Vary"]

    paid = staff.get(f"/applicants?paid=true&program={program.id}")
    assert _text(paid).count('name="ids"') == 28
    assert 'value="true" selected' in _text(paid), "the filter form reflects the URL"

    dated = staff.get("/applicants?submitted_after=2026-03-02&submitted_before=2026-03-03")
    assert _text(dated).count('name="ids"') == 24

    none = staff.get("/applicants?q=nobody-like-this", htmx=True)
    assert "No applicants match these filters" in _text(none)
    assert created[0].id not in _text(none)


def test_bad_filter_values_get_a_clear_400(staff):
    response = staff.get("/applicants?decision=maybe")
    assert response.status_code == 400
    assert "decision must be one of" in _text(response)
    partial = staff.get("/applicants?submitted_after=yesterday", htmx=True)
    assert partial.status_code == 400 and not _is_full_page(partial)
    assert "submitted_after must be an ISO-8601 date" in _text(partial)


def test_applicant_detail_shows_the_whole_file_and_audits_the_view(app, staff, factory):
    inst = staff.institution
    application = factory.application(inst, first_name="Jean", last_name="Habimana", paid=True)
    with app.app_context():
        digest = document_storage().put(b"%PDF-1.4 transcript")
        db.session.add(Document(institution_id=inst.id, application_id=application.id, kind="transcript",
                                filename="transcript.pdf", content_type="application/pdf", size=19,
                                sha256=digest))
        db.session.add(Event(institution_id=inst.id, type="application.submitted", payload={},
                             subject_id=application.id, occurred_at=utcnow()))
        db.session.commit()
        document_id = db.session.scalars(select(Document.id)).one()

    response = staff.get(f"/applicants/{application.id}")
    html = _text(response)
    assert response.status_code == 200
    assert "Jean Habimana" in html and "transcript.pdf" in html and "<td>M-Pesa</td>" in html
    assert "Application submitted" in html

    download = staff.get(f"/applicants/{application.id}/documents/{document_id}")
    assert download.status_code == 200
    assert download.data == b"%PDF-1.4 transcript"
    assert "attachment" in download.headers["Content-Disposition"]

    with app.app_context():
        actions = set(db.session.scalars(select(AuditLog.action).where(AuditLog.institution_id == inst.id)))
    assert {"applicant.view", "document.download"} <= actions


def test_other_institutions_applicants_are_invisible(staff, factory, app):
    other = factory.institution()
    foreign = factory.application(other, first_name="Foreign", last_name="Person")
    factory.application(staff.institution, first_name="Local", last_name="Person")
    with app.app_context():
        digest = document_storage().put(b"secret")
        db.session.add(Document(institution_id=other.id, application_id=foreign.id, kind="id",
                                filename="id.pdf", content_type="application/pdf", size=6, sha256=digest))
        db.session.commit()
        document_id = db.session.scalars(select(Document.id)).one()

    assert "Foreign" not in _text(staff.get("/applicants"))
    assert "Foreign" not in _text(staff.get("/applicants?q=foreign"))
    assert "Foreign" not in _text(staff.get(f"/applicants?q={foreign.id}"))
    assert staff.get(f"/applicants/{foreign.id}").status_code == 404
    assert staff.get(f"/applicants/{foreign.id}/documents/{document_id}").status_code == 404


def test_cycles_page_lists_programs_with_counts(staff, factory):
    inst = staff.institution
    nursing = factory.program(inst, name="BSc Nursing")
    law = factory.program(inst, name="LLB Law")
    cycle = factory.cycle(inst, programs=[nursing, law], name="Intake 2026")
    for _ in range(3):
        factory.application(inst, program=nursing, cycle=cycle)
    factory.application(inst, program=law, cycle=cycle, paid=True)
    factory.cycle(factory.institution(), name="Someone else's cycle")

    html = _text(staff.get("/cycles"))
    assert "Intake 2026" in html and "4 applicants" in html and "1 paid" in html
    assert re.search(r"BSc Nursing</a></td>\s*<td class=\"num\">[^<]+</td>\s*<td class=\"num\">3</td>", html)
    assert re.search(r"LLB Law</a></td>\s*<td class=\"num\">[^<]+</td>\s*<td class=\"num\">1</td>", html)
    assert "Someone else" not in html


def test_cycles_empty_state(staff):
    assert "No cycles yet" in _text(staff.get("/cycles"))


def test_api_key_is_shown_once_then_only_its_prefix(admin, app):
    response = admin.post("/api-keys", {"name": "CRM sync"}, htmx=True)
    assert response.status_code == 201 and not _is_full_page(response)
    raw = re.search(r'<code id="new-key">(sk_live_[A-Za-z0-9]+)</code>', _text(response)).group(1)
    assert 'id="key-table" hx-swap-oob="true"' in _text(response)

    listing = _text(admin.get("/api-keys"))
    assert raw not in listing and raw[:12] in listing and "CRM sync" in listing and "Never" in listing

    ok = app.test_client().get("/api/v1/institution", headers={"Authorization": f"Bearer {raw}"})
    assert ok.status_code == 200
    assert_conforms(ok)
    key_id = re.search(r'id="key-(key_[A-Za-z0-9]+)"', listing).group(1)
    revoked = admin.post(f"/api-keys/{key_id}/revoke", htmx=True)
    assert revoked.status_code == 200 and "Revoked" in _text(revoked)
    refused = app.test_client().get("/api/v1/institution", headers={"Authorization": f"Bearer {raw}"})
    assert refused.status_code == 401
    assert_conforms(refused)


def test_api_key_form_errors_and_plain_form_fallback(admin):
    bad = admin.post("/api-keys", {"name": ""}, htmx=True)
    assert bad.status_code == 422 and "Give the key a name." in _text(bad)
    plain = admin.post("/api-keys", {"name": "Nightly export"})
    assert plain.status_code == 201 and _is_full_page(plain) and "sk_live_" in _text(plain)
    key_id = re.search(r'id="key-(key_[A-Za-z0-9]+)"', _text(plain)).group(1)
    revoked = admin.post(f"/api-keys/{key_id}/revoke")
    assert revoked.status_code == 302


def test_keys_of_another_institution_cannot_be_revoked(admin, factory, app):
    other = factory.institution()
    key, raw = factory.api_key(other)
    assert admin.post(f"/api-keys/{key.id}/revoke", htmx=True).status_code == 404
    still_valid = app.test_client().get("/api/v1/institution", headers={"Authorization": f"Bearer {raw}"})
    assert still_valid.status_code == 200
    assert_conforms(still_valid)
    assert key.prefix not in _text(admin.get("/api-keys"))


def test_roles_change_and_the_last_admin_stays(admin, factory):
    colleague = factory.user(admin.institution)
    promoted = admin.post(f"/users/{colleague.id}/role", {"role": "admin"}, htmx=True)
    assert promoted.status_code == 200 and 'value="admin" selected' in _text(promoted)
    assert admin.post(f"/users/{colleague.id}/role", {"role": "owner"}, htmx=True).status_code == 400
    assert admin.post(f"/users/{admin.user.id}/active", {"active": "false"}, htmx=True).status_code == 400
    demoted = admin.post(f"/users/{colleague.id}/role", {"role": "staff"}, htmx=True)
    assert demoted.status_code == 200


def test_users_of_another_institution_are_out_of_reach(admin, factory):
    stranger = factory.user(factory.institution(), role="admin")
    assert admin.post(f"/users/{stranger.id}/active", {"active": "false"}, htmx=True).status_code == 404
    assert admin.post(f"/users/{stranger.id}/role", {"role": "staff"}, htmx=True).status_code == 404
    assert stranger.email not in _text(admin.get("/users"))


def test_audit_log_shows_only_own_rows_and_filters(admin, portal_as, app):
    other = portal_as("admin")
    other.post("/api-keys", {"name": "theirs"}, htmx=True)
    admin.post("/api-keys", {"name": "ours"}, htmx=True)

    html = _text(admin.get("/audit"))
    assert "Created an API key" in html and admin.user.email in html
    assert other.user.email not in html

    portal_only = admin.get("/audit?source=portal&outcome=success&actor=" + admin.user.email, htmx=True)
    assert portal_only.status_code == 200 and not _is_full_page(portal_only)
    assert "Created an API key" in _text(portal_only)
    assert portal_only.headers["HX-Push-Url"].startswith("/audit?source=portal")
    assert "Nothing recorded" in _text(admin.get("/audit?source=api"))
    assert admin.get("/audit?outcome=weird").status_code == 400
