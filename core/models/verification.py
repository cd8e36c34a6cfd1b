"""Record verification: the billing ledger and stored answers for `Idempotency-Key` replays."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, Numeric, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow


class VerificationCharge(Base):
    """One billed live lookup that the registry answered; `identifiers_hash` is a keyed hash, never the identifiers."""

    __tablename__ = "verification_charges"
    __table_args__ = (
        Index("ix_verification_charges_institution_period", "institution_id", "period", "issuer"),
        Index("ix_verification_charges_institution_created", "institution_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("vch"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    api_key_id: Mapped[str | None] = mapped_column(ForeignKey("api_keys.id"), nullable=True)
    actor: Mapped[str] = mapped_column(String(100))
    issuer: Mapped[str] = mapped_column(String(16))
    level: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(16))
    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))
    currency: Mapped[str] = mapped_column(String(3))
    identifiers_hash: Mapped[str] = mapped_column(String(64))
    period: Mapped[str] = mapped_column(String(7))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class VerificationIdempotency(Base):
    """The stored answer to a request sent with an `Idempotency-Key` (per `scope`), replayed for 24 hours.

    A row without `status_code` is in flight, locked until `locked_until`, after which a retry may take it over.
    """

    __tablename__ = "verification_idempotency"
    __table_args__ = (
        UniqueConstraint("scope", "idempotency_key", name="uq_verification_idempotency_scope_key"),
        Index("ix_verification_idempotency_scope_expires", "scope", "expires_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(32))
    idempotency_key: Mapped[str] = mapped_column(String(255))
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    response_body: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    locked_until: Mapped[datetime] = mapped_column(DateTime)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
