"""Time zones: the settings picker lists canonical zones only (East Africa's first, each labelled with its city
and UTC offset, in the staff member's language), a stored alias still works and reads as its canonical zone,
an unknown zone is refused with a clear message; and the webhooks' "recover since" time is typed in the
portal's zone, named on the form, and converted to UTC (a DST-free zone and one with summer time)."""
from __future__ import annotations

import html
import re
from datetime import datetime

import pytest
from sqlalchemy import select

from core.db import db
from core.models import Institution, User
from core.models.webhooks import WebhookDelivery
from tests.webhooks.conftest import resolver  # noqa: F401 (fixture)

OBSOLETE_ALIASES = ("Africa/Asmera", "Africa/Timbuktu", "Asia/Calcutta", "Europe/Kiev", "US/Eastern", "Etc/UTC")


def _text(response) -> str:
    return response.get_data(as_text=True)


def _picker(page: str) -> str:
    return re.search(r'<select[^>]*name="time_zone"[^>]*>(.*?)</select>', page, re.S).group(1)


def _options(select: str) -> list[tuple[str, str]]:
    return [(value, html.unescape(label)) for value, label in re.findall(r'<option[^>]*value="([^"]*)"[^>]*>([^<]*)<',
                                                                          select)]


def _groups(select: str) -> list[str]:
    return [html.unescape(label) for label in re.findall(r'<optgroup label="([^"]+)"', select)]


def _selected(select: str) -> str:
    return re.search(r'<option selected value="([^"]*)"|<option value="([^"]*)" selected', select).group(
        0).split('value="')[1].split('"')[0]


def _store_zone(app, institution_id: str, zone: str) -> None:
    with app.app_context():
        db.session.get(Institution, institution_id).time_zone = zone
        db.session.commit()


def test_the_picker_lists_canonical_zones_east_africa_first_with_city_and_offset(admin):
    select = _picker(_text(admin.get("/settings")))
    options = _options(select)
    values = [value for value, _label in options]
    assert values[0] == ""  # the country's zone
    groups = _groups(select)
    assert groups[:3] == ["East Africa", "UTC", "Africa"] and "Europe" in groups and "Americas" in groups
    east_africa = re.search(r'<optgroup label="East Africa">(.*?)</optgroup>', select, re.S).group(1)
    assert [value for value, _ in _options(east_africa)][:3] == ["Africa/Kigali", "Africa/Kampala", "Africa/Nairobi"]
    labels = dict(options)
    assert labels["Africa/Kigali"] == "Kigali (UTC+02:00)"
    assert labels["Africa/Nairobi"] == "Nairobi (UTC+03:00)"
    assert labels["Asia/Kolkata"] == "Kolkata (UTC+05:30)"
    assert labels["UTC"] == "UTC (UTC)"
    assert re.fullmatch(r"New York \(UTC−0[45]:00\)", labels["America/New_York"])
    for alias in OBSOLETE_ALIASES:
        assert alias not in values
    assert 380 < len(values) < 450 and len(values) == len(set(values))  # not the ~600 names with aliases


def test_the_picker_speaks_french(app, admin):
    with app.app_context():
        db.session.get(User, admin.user.id).language = "fr"
        db.session.commit()
    select = _picker(_text(admin.get("/settings")))
    assert _groups(select)[:3] == ["Afrique de l’Est", "UTC", "Afrique"]
    labels = dict(_options(select))
    assert labels["Africa/Kigali"] == "Kigali (UTC+02:00)" and labels["Africa/Cairo"].startswith("Le Caire (")


def test_a_stored_alias_keeps_working_and_reads_as_its_canonical_zone(app, admin):
    _store_zone(app, admin.institution.id, "Africa/Asmera")
    page = _text(admin.get("/settings"))
    assert _selected(_picker(page)) == "Africa/Nairobi"
    assert "now Africa/Nairobi" in page and "Africa/Asmera" not in page
    assert "Times in Africa/Nairobi" in _text(admin.get("/api-keys"))
    saved = admin.post("/settings/time-zone", {"time_zone": "Africa/Nairobi"})  # saving the form as shown
    assert saved.status_code == 302
    with app.app_context():
        assert db.session.get(Institution, admin.institution.id).time_zone == "Africa/Nairobi"


def test_a_stored_zone_with_no_listed_equivalent_stays_selected(app, admin):
    _store_zone(app, admin.institution.id, "EST5EDT")
    select = _picker(_text(admin.get("/settings")))
    assert _selected(select) == "EST5EDT"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Africa/Timbuktu", "../../etc/passwd"])
def test_an_unknown_or_obsolete_zone_is_refused_with_a_clear_message(app, admin, zone):
    response = admin.post("/settings/time-zone", {"time_zone": zone})
    page = _text(response)
    assert response.status_code == 400
    assert f"Choose a time zone from the list: “{zone}” is not one Karibu knows." in html.unescape(page)
    assert re.search(r'<select[^>]*aria-invalid="true"[^>]*name="time_zone"|<select[^>]*name="time_zone"[^>]*'
                     r'aria-invalid="true"', page)
    with app.app_context():
        assert db.session.get(Institution, admin.institution.id).time_zone is None  # nothing changed


def _failed_deliveries(app, admin, moments: list[datetime]) -> None:
    """One dead delivery created at each of `moments` (naive UTC)."""
    assert admin.post("/webhooks", {"url": "https://public.example.test/hooks", "events": ["decision.sent"]},
                      htmx=True).status_code == 200
    for _moment in moments:
        assert admin.post("/webhooks/ping", htmx=True).status_code == 200
    with app.app_context():
        deliveries = db.session.scalars(select(WebhookDelivery).where(
            WebhookDelivery.institution_id == admin.institution.id).order_by(WebhookDelivery.created_at)).all()
        for delivery, moment in zip(deliveries, moments, strict=True):
            delivery.created_at, delivery.status = moment, "dead"
        db.session.commit()


def _recover(admin, since: str):
    return admin.post("/webhooks/recover", {"since": since}, htmx=True)


def _message(response) -> str:
    return html.unescape(re.search(r'<div id="log-message"[^>]*>(.*?)</div>\s*</div>', _text(response), re.S)
                         .group(1))


@pytest.mark.usefixtures("resolver")
def test_recover_since_is_typed_in_kigali_time(app, admin):
    admin.post("/settings/time-zone", {"time_zone": "Africa/Kigali"})
    # 05:30 and 06:30 UTC are 07:30 and 08:30 in Kigali (UTC+2, no summer time).
    _failed_deliveries(app, admin, [datetime(2026, 6, 15, 5, 30), datetime(2026, 6, 15, 6, 30)])
    assert "Recover failed deliveries since (time in Africa/Kigali)" in _text(admin.get("/webhooks"))
    recovered = _recover(admin, "2026-06-15T08:00")
    assert recovered.status_code == 200
    assert "Since 15 Jun 2026, 08:00 (Africa/Kigali): 1 delivery queued again." in _message(recovered)
    # 07:00 in Kigali takes in the first as well (the second is already queued again).
    assert "Since 15 Jun 2026, 07:00 (Africa/Kigali): 1 delivery queued again." in _message(
        _recover(admin, "2026-06-15T07:00"))
    # A time with its own offset keeps it.
    assert "Since 15 Jun 2026, 07:30" in _message(_recover(admin, "2026-06-15T05:30:00Z"))


@pytest.mark.usefixtures("resolver")
def test_recover_since_follows_summer_time_in_new_york(app, admin):
    admin.post("/settings/time-zone", {"time_zone": "America/New_York"})
    # In June New York is at UTC−4 (summer time): 01:00 local is 05:00 UTC, before both deliveries. With
    # the winter offset (UTC−5) it would be 06:00 UTC and miss the first.
    _failed_deliveries(app, admin, [datetime(2026, 6, 15, 5, 30), datetime(2026, 6, 15, 6, 30)])
    recovered = _recover(admin, "2026-06-15T01:00")
    assert "Since 15 Jun 2026, 01:00 (America/New_York): 2 deliveries queued again." in _message(recovered)


@pytest.mark.usefixtures("resolver")
def test_a_time_the_clocks_skipped_is_refused_in_words(app, admin):
    admin.post("/settings/time-zone", {"time_zone": "America/New_York"})
    _failed_deliveries(app, admin, [datetime(2026, 3, 8, 5, 0)])
    skipped = _recover(admin, "2026-03-08T02:30")  # clocks went from 02:00 to 03:00 that night
    assert skipped.status_code == 400
    assert ("2026-03-08 02:30 does not exist in America/New_York: the clocks moved forward then."
            in _message(skipped))
    nonsense = _recover(admin, "soon")
    assert nonsense.status_code == 400 and "enter a date and time, e.g. 2026-11-20T08:00" in _message(nonsense)
