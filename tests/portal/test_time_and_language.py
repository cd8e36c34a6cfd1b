"""Time and language: times shown in the institution's zone with the UTC value in `<time datetime>`, the zone
chosen by admins, each staff member's language, and labels (never raw field names) in messages."""
from __future__ import annotations

import re
from datetime import datetime

import pytest
from sqlalchemy import select

from core.db import db
from core.models import ApiKey, AuditLog, Institution, User
from devtools.simulated_records import SIMULATED_RECORDS

KNOWN_MOMENT = datetime(2025, 3, 30, 12, 5)  # naive UTC, as stored


def _text(response) -> str:
    return response.get_data(as_text=True)


def _key_created_at(app, factory, institution, moment=KNOWN_MOMENT):
    key, _ = factory.api_key(institution, name="Admissions CRM sync")
    with app.app_context():
        db.session.get(ApiKey, key.id).created_at = moment
        db.session.commit()
    return key


def _audit_rows(app, action: str) -> list:
    with app.app_context():
        return list(db.session.scalars(select(AuditLog).where(AuditLog.action == action)))


@pytest.mark.parametrize("currency, zone, shown", [
    ("RWF", "Africa/Kigali", "30 Mar 2025, 14:05"),
    ("UGX", "Africa/Kampala", "30 Mar 2025, 15:05"),
    ("KES", "Africa/Nairobi", "30 Mar 2025, 15:05"),
    ("USD", "UTC", "30 Mar 2025, 12:05"),
])
def test_times_are_shown_in_the_zone_of_the_institution_country(app, factory, portal_as, currency, zone, shown):
    institution = factory.institution()
    factory.program(institution, currency=currency)
    admin = portal_as("admin", institution=institution)
    _key_created_at(app, factory, institution)

    html = _text(admin.get("/api-keys"))
    assert f'<time datetime="2025-03-30T12:05:00Z">{shown}</time>' in html
    assert f"Times in {zone}" in html
    assert "UTC</td>" not in html and "12:05 UTC" not in html


def test_an_admin_chooses_the_time_zone_and_the_choice_is_audited(app, factory, portal_as):
    institution = factory.institution()
    factory.program(institution, currency="RWF")
    admin = portal_as("admin", institution=institution)
    _key_created_at(app, factory, institution)

    settings = _text(admin.get("/settings"))
    assert "The zone of your country (Africa/Kigali)" in settings
    assert '<option value="Africa/Lagos">Lagos (UTC+01:00)</option>' in settings

    saved = admin.post("/settings/time-zone", {"time_zone": "America/New_York"})
    assert saved.status_code == 302
    page = _text(admin.get("/api-keys"))
    # 12:05 UTC on 30 March 2025 is 08:05 in New York (summer time); the attribute keeps UTC.
    assert '<time datetime="2025-03-30T12:05:00Z">30 Mar 2025, 08:05</time>' in page
    [row] = _audit_rows(app, "institution.time_zone")
    assert row.target == "America/New_York" and row.actor == admin.user.email
    with app.app_context():
        assert db.session.get(Institution, institution.id).time_zone == "America/New_York"

    back = admin.post("/settings/time-zone", {"time_zone": ""})  # back to the country's zone
    assert back.status_code == 302
    assert "30 Mar 2025, 14:05</time>" in _text(admin.get("/api-keys"))


def test_an_unknown_time_zone_is_refused_by_its_label(admin):
    response = admin.post("/settings/time-zone", {"time_zone": "Mars/Olympus"})
    html = _text(response)
    assert response.status_code == 400
    assert "Choose a time zone from the list" in html and "time_zone" not in re.sub(r"<[^>]+>", "", html)


def test_only_admins_reach_the_settings(staff):
    assert staff.get("/settings").status_code == 403
    assert staff.post("/settings/time-zone", {"time_zone": "UTC"}).status_code == 403


def test_dates_of_a_cycle_are_days_in_the_zone(app, factory, portal_as):
    institution = factory.institution()
    program = factory.program(institution, currency="KES")
    # 22:30 UTC on 31 January is already 1 February in Nairobi (UTC+3).
    factory.cycle(institution, programs=[program], name="Intake", opens_at=datetime(2025, 1, 1, 8),
                  closes_at=datetime(2025, 1, 31, 22, 30))
    staff = portal_as("staff", institution=institution)
    html = _text(staff.get("/cycles"))
    assert '<time datetime="2025-01-31T22:30:00Z">1 Feb 2025</time>' in html


def test_staff_choose_their_language(app, staff):
    page = staff.get("/account/language")
    html = _text(page)
    assert page.status_code == 200 and '<html lang="en">' in html
    assert 'action="/account/language"' in html and '<option selected value="en">English</option>' in html

    chosen = staff.post("/account/language", {"language": "fr", "next": "/cycles"})
    assert chosen.status_code == 302 and chosen.headers["Location"].endswith("/cycles")
    [row] = _audit_rows(app, "user.language")
    assert row.target == "fr" and row.actor == staff.user.email
    with app.app_context():
        assert db.session.get(User, staff.user.id).language == "fr"

    french = _text(staff.get("/cycles"))
    assert '<html lang="fr">' in french
    assert "Aller au contenu principal" in french  # from the French catalogue
    assert "Skip to main content" not in french
    assert '<option selected value="fr">Français</option>' in _text(staff.get("/account/language"))


def test_staff_can_choose_swahili(app, staff):
    assert '<option value="sw">Kiswahili</option>' in _text(staff.get("/account/language"))
    chosen = staff.post("/account/language", {"language": "sw", "next": "/cycles"})
    assert chosen.status_code == 302
    swahili = _text(staff.get("/cycles"))
    assert '<html lang="sw">' in swahili and "Ruka hadi maudhui makuu" in swahili
    assert "Vipindi vya udahili na programu" in swahili and "Cycles and programs" not in swahili


def test_a_language_without_a_staff_catalogue_is_refused(app, staff):
    response = staff.post("/account/language", {"language": "de"})
    assert response.status_code == 400 and "Choose one of: English, Français, Kiswahili." in _text(response)
    with app.app_context():
        assert db.session.get(User, staff.user.id).language is None


def test_an_open_redirect_is_not_followed_after_choosing_a_language(staff):
    chosen = staff.post("/account/language", {"language": "en", "next": "https://evil.example/"})
    assert chosen.headers["Location"].endswith("/account/language")


def test_the_billing_confirmation_is_named_by_its_label(staff, live_registries):
    record = SIMULATED_RECORDS[0]
    refused = staff.post("/verification", dict(record.request), htmx=True)
    html = _text(refused)
    assert refused.status_code == 422
    assert "<strong>Billing confirmation</strong>: Tick the box to accept the charge." in html
    assert "<strong>confirm_billing</strong>" not in html


def test_untouched_fields_carry_no_empty_aria_attributes(client, admin):
    for html in (_text(client.get("/login")), _text(admin.get("/api-keys")), _text(admin.get("/settings"))):
        assert 'aria-invalid="None"' not in html and 'aria-describedby="None"' not in html
        assert 'aria-describedby=""' not in html
    refused = _text(admin.post("/api-keys", {"name": ""}))
    assert re.search(r'<input aria-describedby="name-hint name-error" aria-invalid="true"[^>]* id="name"', refused)


def test_a_refused_filter_is_named_by_its_label(admin):
    response = admin.get("/messages?status=nope")
    html = _text(response)
    assert response.status_code == 400
    assert "Status must be one of: queued, sent, retry_scheduled, failed" in html
    assert "<strong>status</strong>" not in html


def test_audit_days_are_days_of_the_institution_zone(app, factory, portal_as):
    institution = factory.institution()
    factory.program(institution, currency="RWF")
    staff = portal_as("staff", institution=institution)
    with app.app_context():
        # 23:30 UTC on 29 March is 01:30 on 30 March in Kigali.
        db.session.add(AuditLog(institution_id=institution.id, actor="crm-sync", source="api", method="GET",
                                path="/api/v1/cycles", status=200, created_at=datetime(2025, 3, 29, 23, 30)))
        db.session.commit()
    on_the_day = _text(staff.get("/audit?source=api&since=2025-03-30&until=2025-03-30"))
    assert '<time datetime="2025-03-29T23:30:00Z">30 Mar 2025, 01:30</time>' in on_the_day
    day_before = _text(staff.get("/audit?source=api&since=2025-03-29&until=2025-03-29"))
    assert "2025-03-29T23:30:00Z" not in day_before and "Nothing recorded for these filters." in day_before


def test_a_bad_audit_date_is_named_by_its_label(staff):
    response = staff.get("/audit?since=yesterday")
    assert response.status_code == 400 and "Enter the From date as YYYY-MM-DD" in _text(response)


def test_dashboard_names_decisions_in_words_and_counts_with_plurals(factory, portal_as):
    institution = factory.institution()
    program = factory.program(institution)
    cycle = factory.cycle(institution, programs=[program], name="Intake")
    factory.stages(institution)
    factory.application(institution, program=program, cycle=cycle, decision="accepted")
    staff = portal_as("staff", institution=institution)
    html = _text(staff.get("/dashboard"))
    assert re.search(r'decision=none">No decision yet<span class="visually-hidden">: 0 applications</span>', html)
    assert re.search(r'decision=accepted">Accepted<span class="visually-hidden">: 1 application</span>', html)
