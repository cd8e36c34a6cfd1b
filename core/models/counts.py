"""Application counters as delta rows appended by database triggers (migration 0007); a count is the SUM of its rows."""
from __future__ import annotations

from datetime import date

from sqlalchemy import BigInteger, Boolean, Date, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base


class ApplicationCount(Base):
    """Applications per institution, cycle, program, stage, decision, paid and enrolled (as deltas)."""

    __tablename__ = "application_counts"
    __table_args__ = (Index("ix_application_counts_cycle", "institution_id", "cycle_id"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    institution_id: Mapped[str] = mapped_column(String(32))
    cycle_id: Mapped[str] = mapped_column(String(32))
    program_id: Mapped[str] = mapped_column(String(32))
    stage: Mapped[str] = mapped_column(String(64))
    decision: Mapped[str] = mapped_column(String(16))
    paid: Mapped[bool] = mapped_column(Boolean)
    enrolled: Mapped[bool] = mapped_column(Boolean)
    n: Mapped[int] = mapped_column(BigInteger)


class ApplicationDayCount(Base):
    """Applications per institution, cycle and day of submission (as deltas): the dashboard's chart."""

    __tablename__ = "application_day_counts"
    __table_args__ = (Index("ix_application_day_counts_cycle", "institution_id", "cycle_id", "day"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    institution_id: Mapped[str] = mapped_column(String(32))
    cycle_id: Mapped[str] = mapped_column(String(32))
    day: Mapped[date] = mapped_column(Date)
    n: Mapped[int] = mapped_column(BigInteger)
