"""Record verification: the billing ledger."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import DateTime, ForeignKey, Index, Numeric, String
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
