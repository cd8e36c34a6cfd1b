"""Staff sign-in through an institution's OpenID Connect provider: its configuration, the email domains that
lead to it, and the spent `state` values that make each answer of a provider usable once."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, utcnow


class SsoConfiguration(Base):
    """An institution's provider (at most one): who issues its staff's identities and Karibu's client there."""
    __tablename__ = "sso_configurations"

    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(255))
    # Fernet token of the client secret, key derived from SECRET_KEY (label in core/accounts/sso.py).
    client_secret_ciphertext: Mapped[str] = mapped_column(Text)
    # Password sign-in refused for accounts on the domains (admins elsewhere keep it, with two factors).
    require_sso: Mapped[bool] = mapped_column(Boolean, default=False)
    # What a first sign-in without an account does: "none" (refused) or "staff" (a staff account is made).
    create_users: Mapped[str] = mapped_column(String(8), default="none")
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class SsoDomain(Base):
    """An email domain and the one institution whose provider signs its addresses in."""
    __tablename__ = "sso_domains"
    __table_args__ = (Index("ix_sso_domains_institution", "institution_id"),)

    domain: Mapped[str] = mapped_column(String(253), primary_key=True)
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))


class SsoSpentState(Base):
    """The SHA-256 of a `state` whose answer was used: a replayed callback finds it here and signs nobody in."""
    __tablename__ = "sso_spent_states"
    __table_args__ = (Index("ix_sso_spent_states_spent_at", "spent_at"),)

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    spent_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
