"""The application record of the partner API (spec's nested shape plus design.md §5's extra fields)."""
from __future__ import annotations

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


def application_select(scope: InstitutionScope) -> Select:
    """The institution's applications with every column a record needs, in one query."""
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
