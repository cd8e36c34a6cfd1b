"""The staff's applicant list: saved views (per user) and bulk changes of a whole filtered set."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow

BULK_CHANGE_STATUSES = ("queued", "running", "done", "failed")


class SavedView(Base):
    """A named state of the applicant list (filters, sort, columns) that one user saved for themselves."""

    __tablename__ = "saved_views"
    __table_args__ = (UniqueConstraint("user_id", "name", name="uq_saved_views_user_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("view"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    # The list's query string in canonical form, e.g. `stage=interview&sort=-updated&columns=program,stage`.
    query: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class BulkChange(Base):
    """One stage/decision `change` applied batch by batch to every application matching `filters`, with its progress
    (`done` looked at, `changed`, `refused` in failed batches with the first `error`).
    """

    __tablename__ = "bulk_changes"
    __table_args__ = (Index("ix_bulk_changes_institution_created", "institution_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("bulk"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    actor: Mapped[str] = mapped_column(String(254))
    filters: Mapped[dict] = mapped_column(JSON)
    change: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    changed: Mapped[int] = mapped_column(Integer, default=0)
    refused: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
