"""Two-factor sign-in of staff: each user's TOTP secret and one-time recovery codes.

Both hang off the user (whose institution scopes them); neither table has an institution of its own.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow


class TwoFactorCredential(Base):
    """A user's authenticator: pending until confirmed with a code, on from `confirmed_at`."""
    __tablename__ = "two_factor_credentials"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    # Fernet token of the base32 TOTP secret, key derived from SECRET_KEY; never the secret itself.
    secret_ciphertext: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    confirmed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # The last 30-second time step whose code was accepted: a code is never accepted twice.
    last_used_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class RecoveryCode(Base):
    """One single-use recovery code, stored as the SHA-256 of the code (80 random bits, see core/accounts/two_factor)."""
    __tablename__ = "two_factor_recovery_codes"
    __table_args__ = (Index("ix_two_factor_recovery_codes_user", "user_id", "code_hash", unique=True),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("rcv"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    code_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    used_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
