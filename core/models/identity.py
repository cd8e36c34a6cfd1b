"""Institutions, their staff users and their API keys."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import Boolean, DateTime, ForeignKey, LargeBinary, Numeric, String, UniqueConstraint
from sqlalchemy import false as sa_false
from sqlalchemy.orm import Mapped, deferred, mapped_column

from core.models.base import Base, new_id, utcnow

INSTITUTION_ACTIVE = "active"
ROLE_ADMIN = "admin"
ROLE_STAFF = "staff"
ROLES = (ROLE_ADMIN, ROLE_STAFF)


class Institution(Base):
    __tablename__ = "institutions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("ins"))
    name: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16), default=INSTITUTION_ACTIVE)
    verification_price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2), nullable=True)
    verification_currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    # Language of messages and public pages for applicants who did not choose one (en, fr, sw).
    default_language: Mapped[str] = mapped_column(String(8), default="en", server_default="en")
    # Admins must sign in with a second factor (they enrol at their next sign-in or request).
    require_admin_two_factor: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    # IANA zone of every time shown in the portal; None: the zone of the institution's country.
    time_zone: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # What applicants see (core.institutions.identity): each None means "the default".
    display_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    brand_colour: Mapped[str | None] = mapped_column(String(7), nullable=True)
    contact_email: Mapped[str | None] = mapped_column(String(254), nullable=True)
    website: Mapped[str | None] = mapped_column(String(300), nullable=True)
    footer: Mapped[str | None] = mapped_column(String(300), nullable=True)
    # The logo as re-encoded by Pillow (never the uploaded bytes); loaded only when served.
    logo: Mapped[bytes | None] = deferred(mapped_column(LargeBinary, nullable=True))
    logo_type: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # A digest of the stored logo: part of its URL, so a new logo is a new URL and the old one can be cached.
    logo_digest: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # Set on a sandbox (core.institutions.sandbox): the live institution whose test mode this hidden row holds.
    sandbox_of_id: Mapped[str | None] = mapped_column(ForeignKey("institutions.id"), nullable=True, unique=True)

    @property
    def is_active(self) -> bool:
        return self.status == INSTITUTION_ACTIVE and self.deleted_at is None

    @property
    def is_sandbox(self) -> bool:
        return self.sandbox_of_id is not None


class User(Base):
    """A staff account. Accounts are per institution: one email may have an account at several institutions
    (each with its own password), and nothing about one institution's accounts shows at another."""
    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("institution_id", "email", name="uq_users_institution_email"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("usr"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), index=True)
    email: Mapped[str] = mapped_column(String(254), index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16), default=ROLE_STAFF)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_login_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # Language of the staff portal for this user (en, fr, …); None: English.
    language: Mapped[str | None] = mapped_column(String(8), nullable=True)

    # Flask-Login protocol; kept here because it is a property of the account, not of HTTP.
    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def is_active(self) -> bool:
        return self.active

    @property
    def is_anonymous(self) -> bool:
        return False

    def get_id(self) -> str:
        return self.id

    @property
    def is_admin(self) -> bool:
        return self.role == ROLE_ADMIN


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("key"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), index=True)
    name: Mapped[str] = mapped_column(String(100), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
