"""Server-side records of signed-in staff browsers: created at sign-in, checked per request, ended on sign-out,
on security changes, after `PORTAL_SESSION_IDLE_MINUTES` idle or `PORTAL_SESSION_LIFETIME_HOURS` in all.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from sqlalchemy import select, update

from core.config import settings
from core.db import db
from core.models import User, utcnow
from core.models.accounts import StaffSession

# last_seen_at is written at most this often per session, so a busy page does not write on every request.
LAST_SEEN_RESOLUTION = timedelta(minutes=1)
SESSION_LIST_LIMIT = 50

# ua-parser's names for the phone and tablet builds of a browser, and its older system names, as people say
# them ("Safari on iOS", not "Mobile Safari on iOS").
BROWSER_NAMES = {
    "Mobile Safari": "Safari", "Mobile Safari UI/WKWebView": "Safari", "Chrome Mobile": "Chrome",
    "Chrome Mobile iOS": "Chrome", "Chrome Mobile WebView": "Chrome", "Firefox Mobile": "Firefox",
    "Firefox iOS": "Firefox", "Edge Mobile": "Edge", "Opera Mobile": "Opera", "HeadlessChrome": "Headless Chrome",
}
SYSTEM_NAMES = {"Mac OS X": "macOS", "Chrome OS": "ChromeOS"}


@dataclass(frozen=True)
class Device:
    """What a session's User-Agent says: the browser and the operating system, each None when unknown."""
    browser: str | None
    system: str | None


@lru_cache(maxsize=256)
def describe_user_agent(user_agent: str | None) -> Device:
    """The browser and system named by a User-Agent header ("Chrome", "Windows"), via ua-parser's rules."""
    # Imported on first use: ua-parser loads PyYAML, which the web app otherwise needs only for the API.
    from ua_parser import parse as parse_user_agent

    result = parse_user_agent(user_agent or "")
    browser = result.user_agent.family if result.user_agent else None
    system = result.os.family if result.os else None
    browser = BROWSER_NAMES.get(browser, browser) if browser and browser != "Other" else None
    system = SYSTEM_NAMES.get(system, system) if system and system != "Other" else None
    return Device(browser=browser, system=system)


def start_session(user: User, *, user_agent: str, address: str) -> StaffSession:
    record = StaffSession(user_id=user.id, user_agent=(user_agent or "")[:300], address=(address or "")[:64])
    db.session.add(record)
    db.session.commit()
    return record


def live_session(session_id: str | None, user_id: str) -> StaffSession | None:
    """The session record if it belongs to `user_id` and has not ended; refreshes last_seen_at.

    A session idle for too long, or older than the absolute lifetime, is ended here (and is not live).
    """
    if not isinstance(session_id, str) or not session_id:
        return None
    record = db.session.get(StaffSession, session_id)
    if record is None or record.user_id != user_id or record.ended_at is not None:
        return None
    now = utcnow()
    expiry = _expiry_reason(record, now)
    if expiry:
        record.ended_at, record.ended_reason = now, expiry
        db.session.commit()
        return None
    if now - record.last_seen_at >= LAST_SEEN_RESOLUTION:
        record.last_seen_at = now
        db.session.commit()
    return record


def _expiry_reason(record: StaffSession, now) -> str:
    """`idle` or `expired` when the session has run out of time, else "". The idle time is measured from
    last_seen_at, which lags by up to LAST_SEEN_RESOLUTION."""
    config = settings()
    if now - record.created_at >= timedelta(hours=config.PORTAL_SESSION_LIFETIME_HOURS):
        return "expired"
    if now - record.last_seen_at >= timedelta(minutes=config.PORTAL_SESSION_IDLE_MINUTES):
        return "idle"
    return ""


def end_session(user: User, session_id: str, reason: str) -> bool:
    """End one of `user`'s sessions; False when it is not theirs or already ended (nothing changes)."""
    ended = db.session.execute(
        update(StaffSession)
        .where(StaffSession.id == session_id, StaffSession.user_id == user.id, StaffSession.ended_at.is_(None))
        .values(ended_at=utcnow(), ended_reason=reason)).rowcount
    db.session.commit()
    return bool(ended)


def end_all_sessions(user_id: str, reason: str, *, commit: bool = True) -> int:
    """End every live session of the user; how many were ended. `commit=False` leaves it to the caller's
    transaction (a role change and the end of the sessions it implies are one commit)."""
    ended = db.session.execute(
        update(StaffSession).where(StaffSession.user_id == user_id, StaffSession.ended_at.is_(None))
        .values(ended_at=utcnow(), ended_reason=reason)).rowcount
    if commit:
        db.session.commit()
    return ended


def live_sessions(user: User) -> list[StaffSession]:
    """The user's sessions that have not ended nor run out of time, most recently seen first."""
    config, now = settings(), utcnow()
    return list(db.session.scalars(
        select(StaffSession).where(
            StaffSession.user_id == user.id, StaffSession.ended_at.is_(None),
            StaffSession.created_at > now - timedelta(hours=config.PORTAL_SESSION_LIFETIME_HOURS),
            StaffSession.last_seen_at > now - timedelta(minutes=config.PORTAL_SESSION_IDLE_MINUTES))
        .order_by(StaffSession.last_seen_at.desc()).limit(SESSION_LIST_LIMIT)))
