"""Staff account lifecycle: emailed invitations, password-reset links and server-side sign-in sessions."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow


class StaffInvitation(Base):
    """An admin's invitation of an email address to the institution, answered once through an emailed link."""
    __tablename__ = "staff_invitations"
    __table_args__ = (UniqueConstraint("institution_id", "email", name="uq_staff_invitations_institution_email"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("inv"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    email: Mapped[str] = mapped_column(String(254))
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    invited_by: Mapped[str | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    sent_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    accepted_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class PasswordReset(Base):
    """A "forgot password" link of one account (single use; only the token's SHA-256 is stored)."""
    __tablename__ = "password_resets"
    __table_args__ = (Index("ix_password_resets_user", "user_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("pwr"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    used_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class StaffSession(Base):
    """One signed-in browser. The signed session cookie names it; it is checked on every request, so ending
    it here signs that browser out even if someone kept a copy of the cookie."""
    __tablename__ = "staff_sessions"
    __table_args__ = (Index("ix_staff_sessions_user_ended", "user_id", "ended_at"),)

    id: Mapped[str] = mapped_column(String(48), primary_key=True, default=lambda: new_id("ses"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    user_agent: Mapped[str] = mapped_column(String(300), default="")
    address: Mapped[str] = mapped_column(String(64), default="")
    ended_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # Why it ended: sign_out, ended_by_user, sign_out_everywhere, password_changed, password_reset,
    # role_changed, deactivated, idle, expired, two_factor_enrolled, two_factor_required.
    ended_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
