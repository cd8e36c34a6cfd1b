"""Staff sessions that end on their own: two-factor turned on ends the password-only sessions it replaces (two
browsers = two cookie jars), and every session ends after an idle period and an absolute lifetime (moved clock)."""
from __future__ import annotations

from datetime import timedelta

import pyotp
import pytest
from sqlalchemy import select

import core.accounts.sessions as sessions_module
from core.config import Settings
from core.db import db
from core.models import Institution, utcnow
from core.models.accounts import StaffSession
from tests.portal.conftest import _fresh_login_counters, admin, portal_as, staff, csrf_token, sign_in  # noqa: F401
from tests.portal.test_two_factor import enrol, secret_on


def ended_reasons(app, user_id: str) -> list[str | None]:
    with app.app_context():
        return list(db.session.scalars(select(StaffSession.ended_reason).where(StaffSession.user_id == user_id)
                                       .order_by(StaffSession.created_at)))


def test_enrolling_ends_the_other_password_only_browsers_and_keeps_a_fresh_session(app, portal_as):
    laptop = portal_as("staff")
    phone = app.test_client()
    assert sign_in(phone, laptop.user.email).status_code == 302
    laptop_cookie = laptop.client.get_cookie("session").value
    assert phone.get("/dashboard").status_code == 200

    enrol(laptop)
    assert laptop.get("/account").status_code == 200  # the enrolling browser goes on
    assert phone.get("/dashboard").headers["Location"].startswith("/login")  # the password-only one is out
    replay = app.test_client()
    replay.set_cookie("session", laptop_cookie)
    assert replay.get("/dashboard").status_code == 302  # the enrolling browser's old cookie is dead too
    reasons = ended_reasons(app, laptop.user.id)
    assert reasons.count("two_factor_enrolled") == 2 and reasons.count(None) == 1


def test_enrolling_at_a_forced_sign_in_ends_the_admins_older_sessions(app, portal_as, factory):
    first = portal_as("admin")
    old_browser = app.test_client()
    assert sign_in(old_browser, first.user.email).status_code == 302
    with app.app_context():
        # The rule turned on behind this admin's back (e.g. by the CLI): no session was ended yet.
        db.session.get(Institution, first.institution.id).require_admin_two_factor = True
        db.session.commit()
    client = app.test_client()
    assert sign_in(client, first.user.email).headers["Location"] == "/login/two-factor/enrol"
    secret = secret_on(client.get("/login/two-factor/enrol"))
    token = csrf_token(client, "/login/two-factor/enrol")
    done = client.post("/login/two-factor/enrol", data={"code": pyotp.TOTP(secret).now(), "csrf_token": token})
    assert done.status_code == 201
    assert client.get("/dashboard").status_code == 200
    assert old_browser.get("/dashboard").status_code == 302
    assert first.get("/dashboard").status_code == 302


def test_requiring_two_factor_ends_the_password_only_sessions_of_admins(app, portal_as, factory):
    deciding = portal_as("admin")
    institution = deciding.institution
    deciding_elsewhere = app.test_client()  # the deciding admin's second, password-only browser
    assert sign_in(deciding_elsewhere, deciding.user.email).status_code == 302
    other_admin = portal_as("admin", institution=institution)
    enrolled_admin = portal_as("admin", institution=institution)
    enrol(enrolled_admin)
    staff_member = portal_as("staff", institution=institution)
    admin_elsewhere = portal_as("admin")

    assert deciding.post("/users/two-factor-rule", {"required": "y"}).status_code == 302

    # The deciding browser stays, and must enrol before anything else; its other browser is out.
    assert deciding.get("/dashboard").headers["Location"] == "/account/two-factor/enrol"
    assert deciding_elsewhere.get("/dashboard").headers["Location"].startswith("/login")
    assert other_admin.get("/dashboard").headers["Location"].startswith("/login")
    # Signed in with two factors, not an admin, or another institution: untouched.
    assert enrolled_admin.get("/dashboard").status_code == 200
    assert staff_member.get("/dashboard").status_code == 200
    assert admin_elsewhere.get("/dashboard").status_code == 200
    assert ended_reasons(app, other_admin.user.id) == ["two_factor_required"]
    assert ended_reasons(app, deciding.user.id).count(None) == 1


@pytest.fixture
def moved_clock(monkeypatch):
    """The sessions' clock, moved forward by `move(…)`."""
    offset = [timedelta(0)]
    monkeypatch.setattr(sessions_module, "utcnow", lambda: utcnow() + offset[0])

    def move(**delta):
        offset[0] += timedelta(**delta)
    return move


def test_a_session_ends_after_the_idle_period(app, staff, moved_clock, monkeypatch):
    monkeypatch.setitem(app.config, "PORTAL_SESSION_IDLE_MINUTES", 30)
    moved_clock(minutes=29)
    assert staff.get("/dashboard").status_code == 200  # activity restarts the idle period
    moved_clock(minutes=29)
    assert staff.get("/dashboard").status_code == 200
    moved_clock(minutes=31)
    assert staff.get("/dashboard").headers["Location"].startswith("/login")
    assert staff.get("/dashboard").status_code == 302  # ended for good, not only on that request
    assert ended_reasons(app, staff.user.id) == ["idle"]


def test_a_busy_session_ends_after_its_absolute_lifetime(app, staff, moved_clock, monkeypatch):
    monkeypatch.setitem(app.config, "PORTAL_SESSION_LIFETIME_HOURS", 24)
    for _ in range(23):
        moved_clock(hours=1)
        assert staff.get("/dashboard").status_code == 200
    moved_clock(minutes=59)
    assert staff.get("/dashboard").status_code == 200
    moved_clock(minutes=1)
    assert staff.get("/dashboard").status_code == 302
    assert ended_reasons(app, staff.user.id) == ["expired"]


def test_the_documented_defaults():
    assert Settings.model_fields["PORTAL_SESSION_IDLE_MINUTES"].default == 12 * 60
    assert Settings.model_fields["PORTAL_SESSION_LIFETIME_HOURS"].default == 14 * 24


def test_sessions_past_their_time_are_not_listed(app, staff, moved_clock, monkeypatch):
    monkeypatch.setitem(app.config, "PORTAL_SESSION_IDLE_MINUTES", 30)
    other = app.test_client()
    assert sign_in(other, staff.user.email).status_code == 302
    with app.app_context():
        ids = list(db.session.scalars(select(StaffSession.id).where(StaffSession.user_id == staff.user.id)))
    assert all(session_id in staff.get("/account").get_data(as_text=True) for session_id in ids)
    moved_clock(minutes=20)
    assert staff.get("/dashboard").status_code == 200
    moved_clock(minutes=15)  # the other browser idle for 35 minutes, this one for 15
    page = staff.get("/account").get_data(as_text=True)
    assert [session_id in page for session_id in ids].count(True) == 1
