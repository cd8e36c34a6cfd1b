"""Submitting an application: the public apply form, or staff submitting for an applicant."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func

from core.events import emission
from core.errors import Conflict, InvalidInput, NotFound
from core.db import db
from core.i18n import supported_language
from core.models import Applicant, Application, Cycle, Institution, Program, Stage, utcnow
from core.scoping import InstitutionScope
from core.applications.search_text import applicant_search_text

EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# An international number: optional +, 7 to 15 digits (E.164 length), spaces and dashes ignored.
PHONE_PATTERN = re.compile(r"^\+?[0-9]{7,15}$")
NAME_MAX = 100
EMAIL_MAX = 254


@dataclass(frozen=True)
class ApplicantFields:
    first_name: str
    last_name: str
    email: str
    phone: str | None = None


@dataclass(frozen=True)
class OpenCycle:
    id: str
    name: str
    programs: list[tuple[str, str]]  # (program id, name)
    closes_at: datetime


def open_cycles(scope: InstitutionScope) -> list[OpenCycle]:
    """The institution's cycles open right now, with the programs each offers (for the apply form)."""
    now = utcnow()
    cycles = db.session.scalars(scope.select(Cycle).where(Cycle.opens_at <= now, Cycle.closes_at > now)
                                .order_by(Cycle.closes_at, Cycle.name))
    return [OpenCycle(cycle.id, cycle.name, [(program.id, program.name) for program in cycle.programs],
                      cycle.closes_at) for cycle in cycles]


def active_institution(scope: InstitutionScope) -> Institution:
    institution = scope.institution() if "\x00" not in scope.institution_id else None
    if institution is None or not institution.is_active:
        raise NotFound("Institution not found")
    return institution


def clean_applicant_fields(fields: ApplicantFields) -> ApplicantFields:
    """Trimmed, validated fields; the first problem raises InvalidInput naming the field."""
    for name in ("first_name", "last_name", "email", "phone"):
        if "\x00" in (getattr(fields, name) or ""):
            raise InvalidInput(f"{name} must not contain NUL characters", field=name)
    first_name, last_name = fields.first_name.strip(), fields.last_name.strip()
    for name, value in (("first_name", first_name), ("last_name", last_name)):
        if not value:
            raise InvalidInput(f"{name} is required", field=name)
        if len(value) > NAME_MAX:
            raise InvalidInput(f"{name} must be at most {NAME_MAX} characters", field=name)
    email = fields.email.strip().lower()
    if len(email) > EMAIL_MAX or not EMAIL_PATTERN.match(email):
        raise InvalidInput("email must be an email address such as name@example.com", field="email")
    phone = re.sub(r"[\s-]", "", fields.phone or "") or None
    if phone is not None and not PHONE_PATTERN.match(phone):
        raise InvalidInput("phone must be a phone number of 7 to 15 digits, optionally starting with +",
                           field="phone")
    return ApplicantFields(first_name, last_name, email, phone)


def submit_application(scope: InstitutionScope, program_id: str, cycle_id: str, applicant: ApplicantFields, *,
                       submitted_by_staff: bool = False, language: str | None = None) -> Application:
    """Create the application (and its applicant, matched by email) and emit `application.submitted`, in one commit.

    Raises InvalidInput for a bad field or closed cycle, Conflict when the email already applied to this program
    and cycle. `language` (en, fr, sw; else the institution's default) is the one its messages are written in.
    """
    active_institution(scope)
    fields = clean_applicant_fields(applicant)
    for name, value in (("cycle_id", cycle_id), ("program_id", program_id)):
        if not isinstance(value, str) or "\x00" in value:
            raise InvalidInput(f"{name} must be an id", field=name)
    cycle = scope.get(Cycle, cycle_id)
    if cycle is None:
        raise InvalidInput("cycle_id is not a cycle of this institution", field="cycle_id")
    now = utcnow()
    if not cycle.opens_at <= now < cycle.closes_at:
        raise InvalidInput(f"cycle {cycle.name!r} is not open for applications", field="cycle_id")
    program = scope.get(Program, program_id)
    if program is None or program not in cycle.programs:
        raise InvalidInput(f"program_id is not a program offered in cycle {cycle.name!r}", field="program_id")
    first_stage = db.session.scalar(scope.select(Stage, Stage.key).order_by(Stage.position, Stage.key).limit(1))
    if first_stage is None:
        raise Conflict("this institution has no admission pipeline yet")
    already = db.session.scalar(
        scope.select(Application, func.count()).select_from(Application)
        .join(Applicant, Applicant.id == Application.applicant_id)
        .where(Application.program_id == program.id,
               Application.cycle_id == cycle.id, func.lower(func.trim(Applicant.email)) == fields.email))
    if already:
        raise Conflict("an application with this email already exists for this program and cycle",
                       field="email")

    person = _applicant_with_email(scope, fields.email)
    if person is None:
        person = Applicant(institution_id=scope.institution_id, first_name=fields.first_name,
                           last_name=fields.last_name, email=fields.email, phone=fields.phone,
                           language=supported_language(language), created_at=now,
                           search_text=applicant_search_text(fields.first_name, fields.last_name, fields.email))
        db.session.add(person)
        db.session.flush()
    elif person.phone is None:
        person.phone = fields.phone
    application = Application(
        institution_id=scope.institution_id, applicant_id=person.id, applicant=person, program_id=program.id,
        cycle_id=cycle.id, stage=first_stage, amount=program.fee, currency=program.currency, paid=False,
        submitted_at=now, submitted_by_staff=submitted_by_staff, created_at=now, updated_at=now)
    db.session.add(application)
    db.session.flush()
    emission.emit_application_submitted(application)
    db.session.commit()
    return application


def _applicant_with_email(scope: InstitutionScope, email: str) -> Applicant | None:
    """The institution's first applicant (not erased) whose email, normalized, is `email`."""
    return db.session.scalar(
        scope.select(Applicant).where(func.lower(func.trim(Applicant.email)) == email,
                                      Applicant.erased_at.is_(None))
        .order_by(Applicant.created_at, Applicant.id).limit(1))
