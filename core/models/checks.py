"""Credential checks that staff ran for one application (a live verification bound to an applicant)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow


class ApplicantCheck(Base):
    __tablename__ = "applicant_checks"
    __table_args__ = (Index("ix_applicant_checks_application", "application_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("chk"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    application_id: Mapped[str] = mapped_column(ForeignKey("applications.id"))
    issuer: Mapped[str] = mapped_column(String(16))
    level: Mapped[str] = mapped_column(String(16))
    # authentic, withheld, cancelled (what the registry reported) or not_found
    result: Mapped[str] = mapped_column(String(16))
    reference: Mapped[str | None] = mapped_column(String(64), nullable=True)
    candidate_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    actor: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
