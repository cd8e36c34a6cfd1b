"""Programs, cycles, the stage pipeline, applicants, applications, decisions and payments."""
from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import (
    Boolean, Column, Date, DateTime, ForeignKey, Index, Integer, Numeric, String, Table, UniqueConstraint, text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from core.models.base import Base, new_id, utcnow

DECISION_NONE = "none"
DECISIONS = ("none", "accepted", "waitlisted", "rejected", "deferred")
PAYMENT_COMPLETED = "completed"
PAYMENT_PROCESSORS = ("mpesa", "flutterwave")

cycle_programs = Table(
    "cycle_programs",
    Base.metadata,
    Column("cycle_id", ForeignKey("cycles.id"), primary_key=True),
    Column("program_id", ForeignKey("programs.id"), primary_key=True),
)


class Program(Base):
    __tablename__ = "programs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("prg"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    fee: Mapped[Decimal] = mapped_column(Numeric(12, 2), default=Decimal("0"))
    currency: Mapped[str] = mapped_column(String(3), default="RWF")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Cycle(Base):
    __tablename__ = "cycles"
    __table_args__ = (Index("ix_cycles_institution_opens", "institution_id", "opens_at", "id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("cyc"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    name: Mapped[str] = mapped_column(String(200))
    opens_at: Mapped[datetime] = mapped_column(DateTime)
    closes_at: Mapped[datetime] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    programs: Mapped[list[Program]] = relationship(secondary=cycle_programs, order_by=Program.name)


class Stage(Base):
    """One step of an institution's pipeline. `key` is the stage id that the API exposes."""

    __tablename__ = "stages"

    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer, default=0)


class Applicant(Base):
    __tablename__ = "applicants"
    __table_args__ = (
        Index("ix_applicants_inst_search_text", "institution_id", "search_text", "id"),
        # Erased applicants only (few): what search and exports leave out, found without a scan.
        Index("ix_applicants_inst_erased", "institution_id", "id", postgresql_where=text("erased_at IS NOT NULL"),
              sqlite_where=text("erased_at IS NOT NULL")),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("apl"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), index=True)
    first_name: Mapped[str] = mapped_column(String(100))
    last_name: Mapped[str] = mapped_column(String(100))
    email: Mapped[str] = mapped_column(String(254))
    phone: Mapped[str | None] = mapped_column(String(32), nullable=True)
    gender: Mapped[str | None] = mapped_column(String(16), nullable=True)
    date_of_birth: Mapped[date | None] = mapped_column(Date, nullable=True)
    # Language the applicant reads (en, fr, sw), chosen when applying; None: the institution's default.
    language: Mapped[str | None] = mapped_column(String(8), nullable=True)
    # Lower-cased, accent-free "first last email": what search matches against (see core.applications.search_text).
    search_text: Mapped[str] = mapped_column(String(500), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # Set when the person's data was erased on their request (core.privacy.subject_requests): the row is a tombstone.
    erased_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Application(Base):
    __tablename__ = "applications"
    __table_args__ = (
        # The list order; on PostgreSQL it also holds what a search tests, so a search walks the index alone.
        Index("ix_applications_inst_submitted_search", "institution_id", "submitted_at", "id",
              postgresql_include=["applicant_id", "search_text"]),
        Index("ix_applications_inst_cycle_submitted", "institution_id", "cycle_id", "submitted_at", "id"),
        Index("ix_applications_inst_updated", "institution_id", "updated_at", "id"),
        Index("ix_applications_inst_stage_submitted", "institution_id", "stage", "submitted_at", "id"),
        Index("ix_applications_reference", "reference", unique=True),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("app"))
    # What the applicant quotes (`DU-2026-4KX7P`, core.applications.references), unique across institutions.
    reference: Mapped[str] = mapped_column(String(20))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    applicant_id: Mapped[str] = mapped_column(ForeignKey("applicants.id"), index=True)
    program_id: Mapped[str] = mapped_column(ForeignKey("programs.id"), index=True)
    cycle_id: Mapped[str] = mapped_column(ForeignKey("cycles.id"))
    campus_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    stage: Mapped[str] = mapped_column(String(64))
    decision: Mapped[str] = mapped_column(String(16), default=DECISION_NONE)
    enrolled: Mapped[bool] = mapped_column(Boolean, default=False)
    # Kept in step with the payments table by core.applications.payments: lets `paid` filter without a join.
    paid: Mapped[bool] = mapped_column(Boolean, default=False)
    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2), default=Decimal("0"))
    currency: Mapped[str] = mapped_column(String(3), default="RWF")
    submitted_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The applicant's search_text, copied by database triggers (migration 0021_search_text_on_applications) when
    # the application is inserted and whenever the applicant's text changes; never written here.
    search_text: Mapped[str] = mapped_column(String(500), server_default=text("''"), deferred=True)
    submitted_by_staff: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    applicant: Mapped[Applicant] = relationship()
    program: Mapped[Program] = relationship()
    cycle: Mapped[Cycle] = relationship()


class Decision(Base):
    __tablename__ = "decisions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("dec"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    application_id: Mapped[str] = mapped_column(ForeignKey("applications.id"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    response: Mapped[str | None] = mapped_column(String(16), nullable=True)
    responded_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)

    application: Mapped[Application] = relationship()


class Payment(Base):
    __tablename__ = "payments"
    __table_args__ = (UniqueConstraint("processor", "processor_reference", name="uq_payments_processor_ref"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("pay"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    application_id: Mapped[str | None] = mapped_column(ForeignKey("applications.id"), index=True, nullable=True)
    processor: Mapped[str] = mapped_column(String(32))
    processor_reference: Mapped[str] = mapped_column(String(100))
    amount: Mapped[Decimal | None] = mapped_column(Numeric(12, 2), nullable=True)
    currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
