"""The audit log for people: actions and outcomes in words (English and French), targets linked when they
still exist and the viewer may open them, filters by action, person and days (alone and combined), refused
filters told in words, and the technical facts of each row under a disclosure."""
import html
import re
from datetime import datetime

import pytest

from core.db import db
from core.models import AuditLog, Institution, User


def _text(response) -> str:
    return response.get_data(as_text=True)


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr id="audit-\d+">.*?</tr>', page, flags=re.S)


def _cell(row: str, css: str) -> str:
    return html.unescape(re.search(rf'<td class="{css}"[^>]*>(.*?)</td>', row, flags=re.S).group(1)).strip()


def _add(app, institution, **fields) -> None:
    values = dict(institution_id=institution.id, actor="clerk@example.ac.rw", source="portal", action="applicant.view",
                  target="", status=200, method="GET", path="/applicants/x", request_id="req-1",
                  created_at=datetime(2026, 3, 30, 8, 0))
    values.update(fields)
    with app.app_context():
        db.session.add(AuditLog(**values))
        db.session.commit()


@pytest.fixture
def kigali(app, admin):
    with app.app_context():
        db.session.get(Institution, admin.institution.id).time_zone = "Africa/Kigali"
        db.session.commit()
    return admin


def test_actions_and_outcomes_are_words_and_a_language_change_succeeded(admin):
    assert admin.post("/account/language", {"language": "en", "next": "/audit"}).status_code == 302
    [row] = _rows(_text(admin.get("/audit?action=user.language")))
    assert _cell(row, "audit-action") == "Changed the portal language"
    assert '<span class="badge badge-ok">Succeeded</span>' in row, "a 302 after a change is a success"
    assert "user.language" not in re.sub(r"<details.*?</details>", "", row, flags=re.S), "no code outside the detail"

    assert admin.post("/account/language", {"language": "fr"}).status_code == 302
    french = _text(admin.get("/audit?action=user.language"))
    first = _rows(french)[0]
    assert _cell(first, "audit-action") == "A changé la langue du portail"
    assert '<span class="badge badge-ok">Réussi</span>' in first and "Détails techniques" in first
    assert '<option value="user.language" selected>A changé la langue du portail</option>' in french


def test_targets_are_linked_when_they_exist_and_the_viewer_may_open_them(app, factory, admin, portal_as):
    application = factory.application(admin.institution, first_name="Aline", last_name="Mukamana")
    assert admin.get(f"/applicants/{application.id}").status_code == 200
    assert admin.post("/api-keys", {"name": "CRM sync"}, htmx=True).status_code in (200, 201)
    _add(app, admin.institution, action="applicant.change_state", target="app_gone0000000000000000")
    foreign = factory.application(factory.institution())
    _add(app, admin.institution, action="applicant.view", target=foreign.id)

    page = _text(admin.get("/audit"))
    rows = {_cell(row, "audit-action") + "|" + row for row in _rows(page)}
    viewed = next(row for row in rows if row.startswith("Opened an applicant’s file|") and application.id in row)
    assert f'<a href="/applicants/{application.id}">Aline Mukamana</a>' in viewed
    key_row = next(row for row in rows if row.startswith("Created an API key|"))
    assert re.search(r'<a href="/api-keys#key-key_\w+">CRM sync</a>', key_row)
    gone = next(row for row in rows if row.startswith("Changed the stage|"))
    assert "<a href" not in _cell(gone, "audit-target") and "app_gone" in gone, "a missing target is not linked"
    other = next(row for row in rows if foreign.id in row)
    assert "<a href" not in _cell(other, "audit-target"), "another institution's application is not linked"

    staff = portal_as("staff", institution=admin.institution)
    staff_page = _text(staff.get("/audit"))
    assert f'<a href="/applicants/{application.id}">Aline Mukamana</a>' in staff_page
    assert "/api-keys#key-" not in staff_page, "staff cannot open the API keys page: no link"


def test_filters_by_action_person_and_days_alone_and_combined(app, kigali):
    institution = kigali.institution
    # 23:30 UTC on 29 March is 01:30 on 30 March in Kigali.
    _add(app, institution, actor="ana@example.ac.rw", action="applicant.view", target="a1",
         created_at=datetime(2026, 3, 29, 23, 30))
    _add(app, institution, actor="ana@example.ac.rw", action="decision.send", target="a2",
         created_at=datetime(2026, 3, 30, 12, 0))
    _add(app, institution, actor="ben@example.ac.rw", action="applicant.view", target="a3",
         created_at=datetime(2026, 3, 31, 9, 0))
    _add(app, institution, actor="ben@example.ac.rw", action="decision.send", target="a4",
         created_at=datetime(2026, 4, 2, 9, 0))

    def targets(query: str) -> list[str]:
        response = kigali.get("/audit?" + query)
        assert response.status_code == 200, _text(response)
        return [_cell(row, "audit-target").removeprefix('<span class="mono">').removesuffix("</span>")
                for row in _rows(_text(response))]

    assert targets("action=applicant.view") == ["a3", "a1"]
    assert targets("actor=ben@example.ac.rw") == ["a4", "a3"]
    assert targets("since=2026-03-30&until=2026-03-31") == ["a3", "a2", "a1"], "days of Kigali"
    assert targets("until=2026-03-29") == []
    assert targets("action=decision.send&actor=ana@example.ac.rw") == ["a2"]
    assert targets("action=applicant.view&actor=ben@example.ac.rw&since=2026-03-31&until=2026-03-31") == ["a3"]
    assert targets("action=applicant.view&since=2026-04-01") == []

    partial = kigali.get("/audit?action=decision.send&actor=ana@example.ac.rw", htmx=True)
    assert partial.headers["HX-Push-Url"] == "/audit?actor=ana@example.ac.rw&action=decision.send"
    page = _text(kigali.get("/audit"))
    assert '<option value="' + kigali.user.email + '">' in page, "the people of the institution are suggested"
    assert "Africa/Kigali" in page


@pytest.mark.parametrize("query, field, message", [
    ("action=applicant.teleport", "action", "Choose an action from the list."),
    ("since=yesterday", "since", "Enter the From date as YYYY-MM-DD, for example 2026-01-31."),
    ("until=31/03/2026", "until", "Enter the Until date as YYYY-MM-DD, for example 2026-01-31."),
    ("since=2026-04-02&until=2026-04-01", "until", "The Until date must not be before the From date."),
    ("outcome=meh", "outcome", "Choose an outcome from the list."),
])
def test_a_refused_filter_is_a_400_that_says_why_next_to_its_field(admin, query, field, message):
    response = admin.get("/audit?" + query)
    page = html.unescape(_text(response))
    assert response.status_code == 400
    assert re.search(rf'id="{field}" name="{field}"[^>]* aria-invalid="true" aria-describedby="{field}-error"',
                     page), page
    assert f'<p class="error" id="{field}-error">{message}</p>' in page
    assert _rows(page) == []
    partial = admin.get("/audit?" + query, htmx=True)
    assert partial.status_code == 400 and 'role="alert"' in _text(partial)
    assert message in html.unescape(_text(partial)) and "<!doctype html>" not in _text(partial)


def test_a_refused_filter_is_told_in_french(app, admin):
    with app.app_context():
        db.session.get(User, admin.user.id).language = "fr"
        db.session.commit()
    response = admin.get("/audit?action=nope")
    assert response.status_code == 400
    assert "Choisissez une action dans la liste." in html.unescape(_text(response))


def test_the_technical_detail_is_folded_under_a_disclosure(app, admin):
    _add(app, admin.institution, source="api", actor="sk_live_ab12", action="api.list_applications",
         status=429, method="GET", path="/api/v1/applications", query="limit=5", request_id="req-7f3a",
         client_ip="10.0.0.9", duration_ms=12)
    [row] = _rows(_text(admin.get("/audit?source=api")))
    assert _cell(row, "audit-action") == "API: listed applications"
    assert '<span class="badge badge-warn">Refused</span>' in row
    detail = html.unescape(re.search(r"<details class=\"disclosure audit-detail\">(.*?)</details>", row,
                                     flags=re.S).group(1))
    for fact in ("<dd class=\"mono\">429</dd>", "<dd class=\"mono\">req-7f3a</dd>",
                 "<dd class=\"mono\">GET /api/v1/applications?limit=5</dd>", "<dd>API</dd>",
                 "<dd class=\"mono\">api.list_applications</dd>", "<dd class=\"mono\">10.0.0.9</dd>"):
        assert fact in detail, fact
    outside = row.replace(re.search(r"<details.*?</details>", row, flags=re.S).group(0), "")
    assert "req-7f3a" not in outside and "/api/v1/applications" not in outside and "429" not in outside
