"""The history of an application's admission state: one row per change, with who made it."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow

# What changed: a field of the application, or a decision sent to the applicant or answered.
CHANGE_KINDS = ("stage", "decision", "enrolled", "decision_sent", "decision_answered")
# Who changed it: a staff user (email), an API credential (key prefix or OIDC subject), the applicant.
ACTOR_KINDS = ("staff", "api", "applicant")


class ApplicationChange(Base):
    __tablename__ = "application_history"
    __table_args__ = (
        Index("ix_application_history_institution_application", "institution_id", "application_id",
              "changed_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("chg"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    application_id: Mapped[str] = mapped_column(ForeignKey("applications.id"))
    changed_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    kind: Mapped[str] = mapped_column(String(32))
    old_value: Mapped[str | None] = mapped_column(String(64), nullable=True)
    new_value: Mapped[str | None] = mapped_column(String(64), nullable=True)
    decision_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    actor_kind: Mapped[str] = mapped_column(String(16))
    actor_name: Mapped[str] = mapped_column(String(100), default="")
