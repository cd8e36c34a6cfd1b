"""One row per API request and per portal action, secrets redacted before they get here."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, utcnow


class AuditLog(Base):
    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_institution_created", "institution_id", "created_at"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    request_id: Mapped[str] = mapped_column(String(64), default="")
    institution_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    actor: Mapped[str] = mapped_column(String(100), default="")
    source: Mapped[str] = mapped_column(String(16), default="api")
    action: Mapped[str] = mapped_column(String(100), default="")
    target: Mapped[str] = mapped_column(String(200), default="")
    method: Mapped[str] = mapped_column(String(8), default="")
    path: Mapped[str] = mapped_column(String(500), default="")
    query: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[int] = mapped_column(Integer, default=0)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    client_ip: Mapped[str] = mapped_column(String(64), default="")
    user_agent: Mapped[str] = mapped_column(String(300), default="")
    # Free text that explains the action (e.g. why a data-subject request was made).
    detail: Mapped[str | None] = mapped_column(Text, nullable=True)
