"""Forgot password (same answer for every address, throttled), reset links (single use, 1 h), changing the
password, and server-side sessions that really end (sign-out, password change, role change, deactivation,
sign out everywhere), sessions bound to the client they were started from, and what the audit log keeps of a
typed email."""
from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from sqlalchemy import select

from core.db import db
from core.models import User
from core.models.accounts import StaffSession
from core.accounts.passwords import verify_password
from tests.accounts.conftest import audit_rows, deliver, emails_to, form_token, link_path
from tests.portal.conftest import PASSWORD, csrf_token, sign_in

NEW_PASSWORD = "serengeti-migration-77"


def _text(response) -> str:
    return response.get_data(as_text=True)


def _forgot(client, email: str):
    return client.post("/login/forgot", data={"email": email, "csrf_token": csrf_token(client, "/login/forgot")})


def _set_password(client, path: str, password: str = NEW_PASSWORD):
    token = form_token(client, path)
    return client.post(path, data={"password": password, "confirm": password, "csrf_token": token})


def _without_tokens(html: str, email: str) -> str:
    html = html.replace(email, "EMAIL")
    return re.sub(r'(csrf-token" content="|name="csrf_token"[^>]*value=")[^"]+', r"\1", html)


def _session_cookie(client) -> str:
    return client.get_cookie("session").value


def _replay(app, cookie: str, path: str = "/dashboard", **kwargs):
    """A new browser carrying a saved copy of a session cookie."""
    other = app.test_client()
    other.set_cookie("session", cookie)
    return other.get(path, **kwargs)


def test_reset_by_email_then_the_link_is_used_up(mail_app, smtp, factory, app):
    user = factory.user(factory.institution("Strathmore University"), email="wanjiku@example.ac.ke")
    signed_in = app.test_client()
    assert sign_in(signed_in, user.email).status_code == 302

    visitor = app.test_client()
    answer = _forgot(visitor, "Wanjiku@Example.ac.ke ")
    assert answer.status_code == 200 and "a link to choose a new password is on its way" in _text(answer)
    deliver(app)
    [email] = emails_to(smtp, user.email)
    assert "Strathmore University" in email["Subject"]
    path = link_path(email)
    assert path.startswith("/account/reset/")

    assert "wanjiku@example.ac.ke" in _text(visitor.get(path))
    done = _set_password(visitor, path)
    assert done.status_code == 302 and done.headers["Location"] == "/login"
    assert sign_in(app.test_client(), user.email, PASSWORD).status_code == 401
    assert sign_in(app.test_client(), user.email, NEW_PASSWORD).status_code == 302
    assert signed_in.get("/dashboard").status_code == 302  # the reset ended every session

    reused = _set_password(app.test_client(), path, "yet-another-passphrase-5")
    assert reused.status_code == 410 and "This link cannot be used" in _text(reused)
    with app.app_context():
        assert verify_password(db.session.get(User, user.id).password_hash, NEW_PASSWORD)
    assert "password.reset" in [row.action for row in audit_rows(app)]


def test_an_expired_or_forged_reset_link_changes_nothing(mail_app, smtp, factory, app, clock):
    user = factory.user(factory.institution(), email="expiry@example.ac.rw")
    _forgot(app.test_client(), user.email)
    deliver(app)
    path = link_path(emails_to(smtp, user.email)[0])
    clock.advance(timedelta(minutes=59))
    assert app.test_client().get(path).status_code == 200
    clock.advance(timedelta(minutes=2))
    expired = _set_password(app.test_client(), path)
    assert expired.status_code == 410
    forged = path[:-1] + ("a" if path[-1] != "a" else "b")
    assert _set_password(app.test_client(), forged).status_code == 410
    assert _set_password(app.test_client(), "/account/reset/" + "x" * 500).status_code == 410
    assert sign_in(app.test_client(), user.email, PASSWORD).status_code == 302  # password unchanged
    assert [row.status for row in audit_rows(app) if row.action == "password.reset_link_refused"]


def test_forgot_answers_the_same_for_known_and_unknown_addresses(mail_app, smtp, factory, app):
    institution = factory.institution()
    for number in range(4):
        factory.user(institution, email=f"known{number}@example.ac.rw")

    def timed_answer(email: str) -> tuple[float, str]:
        client = app.test_client()
        data = {"email": email, "csrf_token": csrf_token(client, "/login/forgot")}
        started = time.perf_counter()
        response = client.post("/login/forgot", data=data)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200
        return elapsed, _without_tokens(_text(response), email)

    timed_answer("known3@example.ac.rw")  # templates compiled, connections opened
    timings, pages = {"known": [], "unknown": []}, set()
    for number in range(3):  # alternated, so a burst of load on the machine hits both alike
        for kind, email in (("known", f"known{number}@example.ac.rw"), ("unknown", f"nobody{number}@example.ac.rw")):
            elapsed, page = timed_answer(email)
            timings[kind].append(elapsed)
            pages.add(page)
    assert len(pages) == 1  # the same page, the address aside
    assert min(timings["known"] + timings["unknown"]) >= 0.5  # both wait for the same floor
    median = {kind: sorted(values)[1] for kind, values in timings.items()}
    assert abs(median["known"] - median["unknown"]) < 0.25, timings
    deliver(app)
    assert len(emails_to(smtp, "known0@example.ac.rw")) == 1 and not emails_to(smtp, "nobody0@example.ac.rw")


def test_forgot_is_throttled_per_email_and_per_address(mail_app, factory, app, monkeypatch):
    monkeypatch.setitem(app.config, "PORTAL_FORGOT_EMAIL_RATE_LIMIT", "2/hour")
    monkeypatch.setitem(app.config, "PORTAL_FORGOT_ADDRESS_RATE_LIMIT", "4/hour")
    monkeypatch.setattr("portal.accounts.sign_in.FORGOT_RESPONSE_SECONDS", 0.0)
    factory.user(factory.institution(), email="target@example.ac.rw")
    answers = {}
    for email in ("target@example.ac.rw", "ghost@example.ac.rw"):
        statuses = [_forgot(app.test_client(), email).status_code for _ in range(3)]
        answers[email] = statuses
    assert answers["target@example.ac.rw"] == answers["ghost@example.ac.rw"] == [200, 200, 429]
    blocked = _forgot(app.test_client(), "third@example.ac.rw")  # fifth request from this address
    assert blocked.status_code == 429 and "Too many requests" in _text(blocked)


def test_a_cookie_saved_before_sign_out_no_longer_works(staff, app):
    saved = _session_cookie(staff.client)
    assert _replay(app, saved).status_code == 200
    staff.post("/logout")
    replayed = _replay(app, saved)
    assert replayed.status_code == 302 and replayed.headers["Location"].startswith("/login")
    with app.app_context():
        [record] = db.session.scalars(select(StaffSession).where(StaffSession.user_id == staff.user.id)).all()
        assert record.ended_reason == "sign_out"


def test_a_password_change_signs_out_other_browsers_and_keeps_a_fresh_one(app, factory):
    user = factory.user(factory.institution(), email="changer@example.ac.rw")
    laptop, phone = app.test_client(), app.test_client()
    sign_in(laptop, user.email)
    sign_in(phone, user.email)
    phone_cookie, laptop_cookie = _session_cookie(phone), _session_cookie(laptop)

    token = csrf_token(laptop, "/account")
    wrong = laptop.post("/account/password", data={"current_password": "not-my-password", "password": NEW_PASSWORD,
                                                   "confirm": NEW_PASSWORD, "csrf_token": token})
    assert wrong.status_code == 422 and "current password is not right" in _text(wrong)
    assert phone.get("/dashboard").status_code == 200  # nothing changed

    changed = laptop.post("/account/password", data={"current_password": PASSWORD, "password": NEW_PASSWORD,
                                                     "confirm": NEW_PASSWORD, "csrf_token": token})
    assert changed.status_code == 302
    assert laptop.get("/account").status_code == 200  # this browser goes on, with a new session
    assert _session_cookie(laptop) != laptop_cookie
    assert _replay(app, laptop_cookie).status_code == 302  # its old cookie is dead too
    assert phone.get("/dashboard").status_code == 302
    assert _replay(app, phone_cookie).status_code == 302
    assert sign_in(app.test_client(), user.email, NEW_PASSWORD).status_code == 302
    assert "password.change" in [row.action for row in audit_rows(app)]


def test_sessions_are_listed_and_ended_one_by_one_or_everywhere(app, factory):
    user = factory.user(factory.institution(), email="many@example.ac.rw")
    first, second, third = app.test_client(), app.test_client(), app.test_client()
    sign_in(first, user.email)
    sign_in(second, user.email, )
    sign_in(third, user.email)
    page = _text(first.get("/account"))
    assert "many@example.ac.rw" in page and page.count('id="session-ses_') == 3
    assert "this browser" in page
    with app.app_context():
        records = db.session.scalars(select(StaffSession).where(StaffSession.user_id == user.id)
                                     .order_by(StaffSession.created_at)).all()
    second_id = records[1].id
    token = csrf_token(first, "/account")
    assert first.post(f"/account/sessions/{second_id}/end", data={"csrf_token": token}).status_code == 302
    assert second.get("/dashboard").status_code == 302
    assert third.get("/dashboard").status_code == 200
    assert first.post(f"/account/sessions/{second_id}/end", data={"csrf_token": token}).status_code == 404

    everywhere = first.post("/account/sessions/end-all", data={"csrf_token": token})
    assert everywhere.status_code == 302 and everywhere.headers["Location"] == "/login"
    assert first.get("/dashboard").status_code == 302 and third.get("/dashboard").status_code == 302
    actions = [row.action for row in audit_rows(app)]
    assert "session.end" in actions and "session.end_all" in actions


def test_someone_elses_session_cannot_be_ended(app, factory, staff):
    other = factory.user(staff.institution, email="neighbour@example.ac.rw")
    neighbour = app.test_client()
    sign_in(neighbour, other.email)
    with app.app_context():
        record_id = db.session.scalars(select(StaffSession.id).where(StaffSession.user_id == other.id)).one()
    assert staff.post(f"/account/sessions/{record_id}/end").status_code == 404
    assert neighbour.get("/dashboard").status_code == 200


def test_role_change_and_deactivation_end_the_users_sessions(admin, app, factory):
    colleague = factory.user(admin.institution, email="colleague@example.ac.rw")
    browser = app.test_client()
    sign_in(browser, colleague.email)
    assert admin.post(f"/users/{colleague.id}/role", {"role": "admin"}).status_code == 302
    assert browser.get("/dashboard").status_code == 302
    sign_in(browser, colleague.email)
    assert browser.get("/users").status_code == 200  # signed in again, now as admin
    assert admin.post(f"/users/{colleague.id}/active", {"active": "false"}).status_code == 302
    assert browser.get("/dashboard").status_code == 302
    assert admin.post(f"/users/{colleague.id}/active", {"active": "true"}).status_code == 302
    assert browser.get("/dashboard").status_code == 302  # reactivation does not revive old sessions


def test_session_protection_ignores_a_forwarded_for_header_no_proxy_sets(app, factory):
    user = factory.user(factory.institution(), email="roaming@example.ac.rw")
    victim = app.test_client()
    victim.environ_base["REMOTE_ADDR"] = "10.1.1.1"
    sign_in(victim, user.email)
    cookie = _session_cookie(victim)
    assert _replay(app, cookie, environ_base={"REMOTE_ADDR": "10.1.1.1"}).status_code == 200
    stolen = _replay(app, cookie, environ_base={"REMOTE_ADDR": "10.9.9.9"},
                     headers={"X-Forwarded-For": "10.1.1.1"})
    assert stolen.status_code == 302  # claiming the victim's address in a header does not help


@pytest.mark.parametrize(("address", "user_agent"), [("10.9.9.9", None), ("10.1.1.1", "another-browser/2.0")])
def test_a_session_cookie_replayed_from_another_address_or_browser_is_dropped(app, factory, address, user_agent):
    user = factory.user(factory.institution(), email="bound@example.ac.rw")
    victim = app.test_client()
    victim.environ_base.update(REMOTE_ADDR="10.1.1.1", HTTP_USER_AGENT="victim-browser/1.0")
    sign_in(victim, user.email)
    cookie = _session_cookie(victim)
    replayed = app.test_client()
    replayed.environ_base.update(REMOTE_ADDR=address, HTTP_USER_AGENT=user_agent or "victim-browser/1.0")
    replayed.set_cookie("session", cookie)
    refused = replayed.get("/dashboard")
    assert refused.status_code == 302 and refused.headers["Location"].startswith("/login")
    # The copy's session is dropped (nothing left to retry with), the victim's own browser stays signed in.
    replayed.environ_base.update(REMOTE_ADDR="10.1.1.1", HTTP_USER_AGENT="victim-browser/1.0")
    assert replayed.get("/dashboard").status_code == 302
    assert victim.get("/dashboard").status_code == 200


def test_a_password_typed_into_the_email_field_never_reaches_the_audit_log(app, factory, client):
    factory.user(factory.institution(), email="careful@example.ac.rw")
    secret = "My-Secret-Passphrase-99"
    assert sign_in(client, secret, secret).status_code == 401
    assert sign_in(client, "careful@example.ac.rw", "wrong-password-here").status_code == 401
    _forgot(app.test_client(), secret)
    rows = audit_rows(app)
    assert all(secret.lower() not in (row.target + row.path + row.query + (row.detail or "")).lower() for row in rows)
    failed = [row.target for row in rows if row.action == "login.failed"]
    assert failed == ["(not an email address)", "careful@example.ac.rw"]


def test_the_account_page_shows_details_and_own_recent_activity(staff, factory, app):
    staff.post("/logout")
    browser = app.test_client()
    sign_in(browser, staff.user.email)
    page = _text(browser.get("/account"))
    assert staff.user.email in page and "Staff" in page
    assert "Signed out" in page and "Signed in" in page  # own audit entries, in words
    assert ">logout<" not in page and ">login<" not in page
    assert 'href="/account"' in page  # linked from the header
