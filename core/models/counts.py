"""Application counters that make the dashboard, the cycles page and list totals cost the same at any size.

The rows are deltas: database triggers on `applications` (migration 0007) append one row per changed
combination of counted values in the same transaction as the write, so the counters can never drift from
the table whichever code path writes it (ORM, bulk UPDATE, COPY). A count is the SUM of its rows;
`core.applications.counters.compact_counts` folds the deltas into one row per combination from time to time.
"""
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
