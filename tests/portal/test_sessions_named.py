"""The account page names each signed-in browser by browser and system ("Chrome on Windows", via ua-parser),
and each End button after its session (its name, the current one marked, its last activity), in English and
French."""
from __future__ import annotations

import html
import re
from datetime import datetime, timedelta

from sqlalchemy import select

from core.accounts import sessions as session_rules
from core.db import db
from core.models import User
from core.models.accounts import StaffSession
from tests.portal.conftest import csrf_token, sign_in

CHROME_WINDOWS = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                  "Chrome/131.0.0.0 Safari/537.36")
SAFARI_IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
                 "Version/17.5 Mobile/15E148 Safari/604.1")
FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
UNKNOWN = "internal-sync-tool/0.3"
LAST_SEEN = datetime(2026, 11, 26, 12, 5)  # naive UTC: 14:05 in Kigali


def _browser(app, user, agent: str, address: str = "127.0.0.1"):
    client = app.test_client()
    client.environ_base.update(HTTP_USER_AGENT=agent, REMOTE_ADDR=address)
    assert sign_in(client, user.email).status_code == 302
    return client


def _end_labels(page: str) -> list[str]:
    return [html.unescape(label) for label in re.findall(r'<button[^>]*aria-label="([^"]+)"[^>]*>\s*(?:End|Terminer)\s*<',
                                                         page)]


def _names(page: str) -> list[str]:
    return [html.unescape(name) for name in re.findall(r'<span class="session-name">([^<]+)</span>', page)]


def _pin_last_seen(app, user, monkeypatch):
    """Every session of `user` started an hour before LAST_SEEN and last seen then, and the sessions' clock at
    LAST_SEEN: the page shows a fixed time."""
    monkeypatch.setattr(session_rules, "utcnow", lambda: LAST_SEEN)
    with app.app_context():
        for record in db.session.scalars(select(StaffSession).where(StaffSession.user_id == user.id)):
            record.created_at, record.last_seen_at = LAST_SEEN - timedelta(hours=1), LAST_SEEN
        db.session.commit()


def test_sessions_are_named_by_browser_and_system_and_each_end_button_after_its_session(app, factory, monkeypatch):
    institution = factory.institution()
    factory.program(institution, currency="RWF")  # times in Africa/Kigali
    user = factory.user(institution, email="named@example.ac.rw")
    laptop = _browser(app, user, CHROME_WINDOWS)
    _browser(app, user, SAFARI_IPHONE)
    _browser(app, user, FIREFOX_LINUX)
    _browser(app, user, UNKNOWN)
    _pin_last_seen(app, user, monkeypatch)

    page = laptop.get("/account").get_data(as_text=True)
    assert sorted(_names(page)) == ["Chrome on Windows", "Firefox on Linux", "Safari on iOS", "Unknown browser"]
    assert "Mozilla/5.0" not in page  # the raw header is not what people read
    labels = _end_labels(page)
    assert len(labels) == 4 and len(set(labels)) == 4
    assert "End session: Chrome on Windows (this browser), last active 26 Nov 2026, 14:05" in labels
    assert "End session: Safari on iOS, last active 26 Nov 2026, 14:05" in labels
    assert "End session: Unknown browser, last active 26 Nov 2026, 14:05" in labels
    # The current session carries the visible mark too, on its own row.
    row = re.search(r'<tr id="session-[^"]+">(?:(?!</tr>).)*Chrome on Windows(?:(?!</tr>).)*</tr>', page, re.S).group(0)
    assert "this browser" in row


def test_two_sessions_that_would_read_the_same_are_told_apart_by_address(app, factory, monkeypatch):
    user = factory.user(factory.institution(), email="twins@example.ac.rw")
    office = _browser(app, user, CHROME_WINDOWS, address="10.0.0.7")
    _browser(app, user, CHROME_WINDOWS, address="10.0.0.8")
    _browser(app, user, CHROME_WINDOWS, address="10.0.0.8")
    _pin_last_seen(app, user, monkeypatch)
    # Session protection binds a session to its address: the office browser reads its page from 10.0.0.7.
    labels = _end_labels(office.get("/account").get_data(as_text=True))
    assert len(labels) == 3
    assert "End session: Chrome on Windows (this browser), last active 26 Nov 2026, 12:05" in labels
    # Same browser, same address, same minute: numbered.
    assert "End session: Chrome on Windows from 10.0.0.8, session 1, last active 26 Nov 2026, 12:05" in labels
    assert "End session: Chrome on Windows from 10.0.0.8, session 2, last active 26 Nov 2026, 12:05" in labels


def test_the_session_names_and_end_buttons_are_in_french(app, factory, monkeypatch):
    institution = factory.institution()
    factory.program(institution, currency="RWF")
    user = factory.user(institution, email="nommee@example.ac.rw")
    with app.app_context():
        db.session.get(User, user.id).language = "fr"
        db.session.commit()
    laptop = _browser(app, user, FIREFOX_LINUX)
    _browser(app, user, UNKNOWN)
    _pin_last_seen(app, user, monkeypatch)

    page = laptop.get("/account").get_data(as_text=True)
    assert sorted(_names(page)) == ["Firefox sous Linux", "Navigateur inconnu"]
    labels = _end_labels(page)
    assert "Terminer la session : Firefox sous Linux (ce navigateur), dernière activité 26 nov. 2026, 14:05" in labels
    assert "Terminer la session : Navigateur inconnu, dernière activité 26 nov. 2026, 14:05" in labels


def test_an_end_button_ends_the_session_it_names(app, factory):
    user = factory.user(factory.institution(), email="ender@example.ac.rw")
    laptop = _browser(app, user, CHROME_WINDOWS)
    phone = _browser(app, user, SAFARI_IPHONE)
    page = laptop.get("/account").get_data(as_text=True)
    form = re.search(r'action="(/account/sessions/[^"]+/end)"(?:(?!</form>).)*aria-label="End session: Safari on iOS,',
                     page, re.S)
    assert form, "no End button named after the Safari session"
    ended = laptop.post(form.group(1), data={"csrf_token": csrf_token(laptop, "/account")})
    assert ended.status_code == 302
    assert phone.get("/dashboard").status_code == 302  # the phone is signed out
    assert laptop.get("/dashboard").status_code == 200
    assert _names(laptop.get("/account").get_data(as_text=True)) == ["Chrome on Windows"]
