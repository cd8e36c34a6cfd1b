"""Server-side records of signed-in staff browsers: created at sign-in, checked on every request, ended at
sign-out, by the user ("end", "sign out everywhere") and by every change that must sign a user out (password
changed or reset, role changed, account deactivated)."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from core.db import db
from core.models import User, utcnow
from core.models.accounts import StaffSession

# last_seen_at is written at most this often per session, so a busy page does not write on every request.
LAST_SEEN_RESOLUTION = timedelta(minutes=1)
SESSION_LIST_LIMIT = 50


def start_session(user: User, *, user_agent: str, address: str) -> StaffSession:
    record = StaffSession(user_id=user.id, user_agent=(user_agent or "")[:300], address=(address or "")[:64])
    db.session.add(record)
    db.session.commit()
    return record


def live_session(session_id: str | None, user_id: str) -> StaffSession | None:
    """The session record if it belongs to `user_id` and has not ended; refreshes last_seen_at."""
    if not isinstance(session_id, str) or not session_id:
        return None
    record = db.session.get(StaffSession, session_id)
    if record is None or record.user_id != user_id or record.ended_at is not None:
        return None
    now = utcnow()
    if now - record.last_seen_at >= LAST_SEEN_RESOLUTION:
        record.last_seen_at = now
        db.session.commit()
    return record


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
    """The user's sessions that have not ended, most recently seen first."""
    return list(db.session.scalars(
        select(StaffSession).where(StaffSession.user_id == user.id, StaffSession.ended_at.is_(None))
        .order_by(StaffSession.last_seen_at.desc()).limit(SESSION_LIST_LIMIT)))
