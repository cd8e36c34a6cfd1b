"""The records of the partner API: applications (spec's nested shape plus design.md §5's extra fields) and
cycles. Each record has a nested JSON form and a flat form (values in the order of its dotted column names)
for CSV, built from the same row so the two never disagree.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select

from core.models import Applicant, Application, Cycle, Program
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z

# Dotted names in record order: the CSV header and the JSON key order agree.
RECORD_COLUMNS = (
    "id",
    "applicant_id",
    "personal.first_name",
    "personal.last_name",
    "personal.email",
    "personal.phone",
    "application.program_id",
    "application.program_name",
    "application.cycle_id",
    "application.cycle_name",
    "application.stage",
    "application.decision",
    "application.enrolled",
    "application.submitted_at",
    "application.submitted_by_staff",
    "application.updated_at",
    "payment.paid",
    "payment.currency",
    "payment.amount",
)

# One selected column per entry of RECORD_COLUMNS, in the same order.
_SELECTED = (
    Application.id,
    Application.applicant_id,
    Applicant.first_name,
    Applicant.last_name,
    Applicant.email,
    Applicant.phone,
    Application.program_id,
    Program.name.label("program_name"),
    Application.cycle_id,
    Cycle.name.label("cycle_name"),
    Application.stage,
    Application.decision,
    Application.enrolled,
    Application.submitted_at,
    Application.submitted_by_staff,
    Application.updated_at,
    Application.paid,
    Application.currency,
    Application.amount,
)

CYCLE_COLUMNS = ("id", "name", "opens_at", "closes_at", "status", "programs.id", "programs.name")
CYCLE_LIST_SEPARATOR = "; "


def application_select(scope: InstitutionScope) -> Select:
    """The institution's applications with every column a record needs, in one query.

    The selected columns follow RECORD_COLUMNS, so a row is already the flat record apart from value
    formatting (see `record_values`).
    """
    return (
        scope.select(Application, *_SELECTED)
        .select_from(Application)
        .join(Applicant, Applicant.id == Application.applicant_id)
        .join(Program, Program.id == Application.program_id)
        .join(Cycle, Cycle.id == Application.cycle_id)
    )


def application_record(row) -> dict:
    return {
        "id": row.id,
        "applicant_id": row.applicant_id,
        "personal": {
            "first_name": row.first_name,
            "last_name": row.last_name,
            "email": row.email,
            "phone": row.phone,
        },
        "application": {
            "program_id": row.program_id,
            "program_name": row.program_name,
            "cycle_id": row.cycle_id,
            "cycle_name": row.cycle_name,
            "stage": row.stage,
            "decision": row.decision,
            "enrolled": bool(row.enrolled),
            "submitted_at": isoformat_z(row.submitted_at),
            "submitted_by_staff": bool(row.submitted_by_staff),
            "updated_at": isoformat_z(row.updated_at),
        },
        "payment": {
            "paid": bool(row.paid),
            "currency": row.currency,
            "amount": float(row.amount) if row.amount is not None else None,
        },
    }


def record_values(row) -> tuple:
    """The flat record in RECORD_COLUMNS order, for CSV. The amount stays a Decimal (`50000.00`)."""
    return (
        row.id,
        row.applicant_id,
        row.first_name,
        row.last_name,
        row.email,
        row.phone,
        row.program_id,
        row.program_name,
        row.cycle_id,
        row.cycle_name,
        row.stage,
        row.decision,
        bool(row.enrolled),
        isoformat_z(row.submitted_at),
        bool(row.submitted_by_staff),
        isoformat_z(row.updated_at),
        bool(row.paid),
        row.currency,
        row.amount,
    )


def cycle_status(cycle: Cycle, now: datetime) -> str:
    if now < cycle.opens_at:
        return "upcoming"
    if now < cycle.closes_at:
        return "open"
    return "closed"


def cycle_record(cycle: Cycle, now: datetime) -> dict:
    return {
        "id": cycle.id,
        "name": cycle.name,
        "opens_at": isoformat_z(cycle.opens_at),
        "closes_at": isoformat_z(cycle.closes_at),
        "status": cycle_status(cycle, now),
        "programs": [{"id": program.id, "name": program.name} for program in cycle.programs],
    }


def cycle_values(record: dict) -> tuple:
    """The flat cycle record in CYCLE_COLUMNS order: program ids and names joined by CYCLE_LIST_SEPARATOR."""
    return (
        record["id"],
        record["name"],
        record["opens_at"],
        record["closes_at"],
        record["status"],
        CYCLE_LIST_SEPARATOR.join(program["id"] for program in record["programs"]),
        CYCLE_LIST_SEPARATOR.join(program["name"] for program in record["programs"]),
    )
