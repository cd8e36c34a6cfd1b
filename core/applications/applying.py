"""Submitting an application: the public apply form, or staff submitting for an applicant."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func

from core.events import emission
from core.errors import Conflict, InvalidInput, NotFound, problem
from core.accounts.preferences import fee_currency
from core.db import db
from core.i18n import supported_language
from core.models import Applicant, Application, Cycle, Institution, Program, Stage, utcnow
from core.scoping import InstitutionScope
from core.applications.references import new_reference
from core.applications.search_text import applicant_search_text

EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# An international number: optional +, 7 to 15 digits (E.164 length), spaces and dashes ignored.
PHONE_PATTERN = re.compile(r"^\+?[0-9]{7,15}$")
# What a number may hold besides: removed before the check and before it is stored.
PHONE_IGNORED = re.compile(r"[\s-]")
# How a mobile number is written in the country of the institution's fee currency: the form's hint.
PHONE_FORMAT_BY_CURRENCY = {
    "RWF": "+250 7xx xxx xxx",
    "UGX": "+256 7xx xxx xxx",
    "KES": "+254 7xx xxx xxx",
}
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


def phone_format(scope: InstitutionScope) -> str | None:
    """How a mobile number is written in the institution's country (`+250 7xx xxx xxx`), if known."""
    return PHONE_FORMAT_BY_CURRENCY.get(fee_currency(scope))


def active_institution(scope: InstitutionScope) -> Institution:
    institution = scope.institution() if "\x00" not in scope.institution_id else None
    if institution is None or not institution.is_active:
        raise NotFound("Institution not found")
    return institution


def phone_digits(phone: str | None) -> str:
    """The number as checked and stored: spaces and dashes removed."""
    return PHONE_IGNORED.sub("", phone or "")


def _field_problem(name: str, rule: str, message: str, **values) -> dict:
    """A problem with one field; `rule` (required, too_long, email, phone, …) lets a page word it itself."""
    return problem("body", name, message, rule=rule, **values)


def applicant_field_problems(fields: ApplicantFields, *, phone_required: bool = False
                             ) -> tuple[ApplicantFields, list[dict]]:
    """The trimmed fields and every problem with them (not only the first), each naming its field."""
    problems = []
    for name in ("first_name", "last_name", "email", "phone"):
        if "\x00" in (getattr(fields, name) or ""):
            problems.append(_field_problem(name, "invalid", f"{name} must not contain NUL characters"))
    if problems:
        return fields, problems
    first_name, last_name = (fields.first_name or "").strip(), (fields.last_name or "").strip()
    for name, value in (("first_name", first_name), ("last_name", last_name)):
        if not value:
            problems.append(_field_problem(name, "required", f"{name} is required"))
        elif len(value) > NAME_MAX:
            problems.append(_field_problem(name, "too_long", f"{name} must be at most {NAME_MAX} characters",
                                           limit=NAME_MAX))
    email = (fields.email or "").strip().lower()
    if not email:
        problems.append(_field_problem("email", "required", "email is required"))
    elif len(email) > EMAIL_MAX or not EMAIL_PATTERN.match(email):
        problems.append(_field_problem("email", "email", "email must be an email address such as name@example.com"))
    phone = phone_digits(fields.phone) or None
    if phone is None and phone_required:
        problems.append(_field_problem("phone", "required", "phone is required"))
    elif phone is not None and not PHONE_PATTERN.match(phone):
        problems.append(_field_problem("phone", "phone",
                                       "phone must be a phone number of 7 to 15 digits, optionally starting with +"))
    return ApplicantFields(first_name, last_name, email, phone), problems


def _cycle_and_program(scope: InstitutionScope, cycle_id, program_id) -> tuple[Cycle | None, Program | None,
                                                                                 list[dict]]:
    """The chosen cycle (open now) and program (offered in it), and the problems with either."""
    problems = []
    for name, value in (("cycle_id", cycle_id), ("program_id", program_id)):
        if not value:
            problems.append(_field_problem(name, "required", f"{name} is required"))
        elif not isinstance(value, str) or "\x00" in value:
            problems.append(_field_problem(name, "invalid", f"{name} must be an id"))
    named = {entry["name"] for entry in problems}
    cycle = scope.get(Cycle, cycle_id) if "cycle_id" not in named else None
    now = utcnow()
    if "cycle_id" not in named:
        if cycle is None:
            problems.append(_field_problem("cycle_id", "invalid", "cycle_id is not a cycle of this institution"))
        elif not cycle.opens_at <= now < cycle.closes_at:
            problems.append(_field_problem("cycle_id", "closed",
                                           f"cycle {cycle.name!r} is not open for applications"))
            cycle = None
    program = scope.get(Program, program_id) if "program_id" not in named else None
    if "program_id" not in named:
        if program is None:
            problems.append(_field_problem("program_id", "invalid",
                                           "program_id is not a program of this institution"))
        elif cycle is not None and program not in cycle.programs:
            problems.append(_field_problem("program_id", "not_in_cycle",
                                           f"program_id is not a program offered in cycle {cycle.name!r}"))
    return cycle, program, problems


def submit_application(scope: InstitutionScope, program_id: str, cycle_id: str, applicant: ApplicantFields, *,
                       submitted_by_staff: bool = False, language: str | None = None,
                       phone_required: bool = False) -> Application:
    """Create the application (and its applicant, matched by email) with its reference, and emit
    `application.submitted`, in one commit.

    Raises InvalidInput with every problem at once (bad fields, a closed cycle, a program it does not offer),
    Conflict when the email already applied to this program and cycle. `language` (en, fr, sw; else the
    institution's default) is the one its messages are written in.
    """
    institution = active_institution(scope)
    fields, problems = applicant_field_problems(applicant, phone_required=phone_required)
    cycle, program, choice_problems = _cycle_and_program(scope, cycle_id, program_id)
    problems += choice_problems
    if problems:
        raise InvalidInput(problems[0]["message"], errors=problems)
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
                       errors=[_field_problem("email", "duplicate", "an application with this email already "
                                              "exists for this program and cycle")])

    now = utcnow()
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
        reference=new_reference(institution.display_name or institution.name, now),
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
