"""The event outbox: events written in the transaction of their change, ordered by database-set `xact_id` and `seq`."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, FetchedValue, ForeignKey, Index, String
from sqlalchemy import true as sa_true
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_institution_occurred", "institution_id", "occurred_at"),
        Index("ix_events_feed", "institution_id", "xact_id", "seq"),
        Index("uq_events_seq", "seq", unique=True),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("evt"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    type: Mapped[str] = mapped_column(String(64))
    occurred_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The `data` object of the delivered envelope; the subject lets the portal build a timeline.
    payload: Mapped[dict] = mapped_column(JSON)
    subject_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    # Feed order, assigned by the database (never sent by the application).
    seq: Mapped[int] = mapped_column(BigInteger, server_default=FetchedValue())
    xact_id: Mapped[int] = mapped_column(BigInteger, server_default=FetchedValue())
    # True for an example event sent from the webhook settings (`test: true` in its envelope); never in the feed.
    is_test: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # False for an event of a sandbox (test mode): `"livemode": false` in its envelope, `X-Karibu-Mode: test`.
    livemode: Mapped[bool] = mapped_column(Boolean, default=True, server_default=sa_true())
