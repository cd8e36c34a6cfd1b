"""Test mode: each institution's sandbox, a hidden companion institution (`sandbox_of_id`) that test keys and the
portal's "Viewing test data" reach, created on first use with the live programs, cycles and pipeline and
`SANDBOX_APPLICATIONS` sample applicants."""
from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from core.applications.sample_applicants import (
    APPLICANT_COLUMNS, APPLICATION_COLUMNS, DECISION_COLUMNS, PAYMENT_COLUMNS, BulkWriter, SampleReferences, generate_batch,
)
from core.db import db
from core.errors import NotFound
from core.models import (
    Applicant, ApplicantCheck, Application, ApplicationCount, ApplicationDayCount, AuditLog, Cycle, Decision,
    Document, Event, Payment, Program, Stage, WebhookAttempt, WebhookDelivery, utcnow,
)
from core.models.admissions import cycle_programs
from core.models.applicant_list import BulkChange
from core.models.history import ApplicationChange
from core.models.identity import Institution
from core.models.messages import Message
from core.scoping import InstitutionScope

SANDBOX_APPLICATIONS = 200
# What a sandbox of an institution without programs or cycles yet is filled with.
SAMPLE_PROGRAMS = (("BSc Computer Science", "50000", "RWF"), ("BSc Nursing", "50000", "RWF"),
                   ("Bachelor of Business Administration", "40000", "RWF"))
# The sandbox's rows, children first: what a reset deletes (its API keys, users and webhook endpoint stay).
SANDBOX_DATA = (Message, Payment, Document, Decision, ApplicationChange, ApplicantCheck, Application, Applicant,
                Event, ApplicationCount, ApplicationDayCount, BulkChange, AuditLog)


def sandbox_scope(scope: InstitutionScope) -> InstitutionScope:
    """The scope of the institution's sandbox, created and filled with sample data on first use."""
    sandbox = scope.sandbox()
    if sandbox is None:
        sandbox = _create_sandbox(scope)
    return InstitutionScope(sandbox.id)


def live_scope(scope: InstitutionScope) -> InstitutionScope:
    """The live institution of a sandbox's scope; a live institution's scope as it is."""
    institution = scope.institution()
    return InstitutionScope(institution.sandbox_of_id) if institution and institution.sandbox_of_id else scope


def is_test_mode(scope: InstitutionScope) -> bool:
    institution = scope.institution()
    return institution is not None and institution.is_sandbox


def reset_sandbox(scope: InstitutionScope, on_progress: Callable[[int], None] | None = None) -> InstitutionScope:
    """Delete everything the sandbox holds (its webhook endpoint for tests stays) and generate it afresh."""
    sandbox = sandbox_scope(scope)
    deliveries = sandbox.select(WebhookDelivery, WebhookDelivery.id)
    db.session.execute(delete(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(deliveries)))
    db.session.execute(sandbox.delete_all(WebhookDelivery))
    for model in SANDBOX_DATA:
        db.session.execute(sandbox.delete_all(model))
    db.session.execute(delete(cycle_programs).where(
        cycle_programs.c.cycle_id.in_(sandbox.select(Cycle, Cycle.id))))
    for model in (Cycle, Program, Stage):
        db.session.execute(sandbox.delete_all(model))
    _fill(scope, sandbox, on_progress)
    db.session.commit()
    return sandbox


def _create_sandbox(scope: InstitutionScope) -> Institution:
    live = scope.institution()
    if live is None or live.is_sandbox:
        raise NotFound("Institution not found")
    sandbox = Institution(
        name=f"{live.name} (test mode)", sandbox_of_id=live.id, verification_price=live.verification_price,
        verification_currency=live.verification_currency, default_language=live.default_language,
        time_zone=live.time_zone, display_name=live.display_name, brand_colour=live.brand_colour,
        contact_email=live.contact_email, website=live.website, footer=live.footer)
    db.session.add(sandbox)
    try:
        db.session.flush()
    except IntegrityError:  # another request created it at the same moment
        db.session.rollback()
        return scope.sandbox()
    _fill(scope, InstitutionScope(sandbox.id))
    db.session.commit()
    return sandbox


def _fill(live: InstitutionScope, sandbox: InstitutionScope, on_progress: Callable[[int], None] | None = None) -> None:
    """Copy the live pipeline, programs and cycles into the sandbox, then write the sample applications."""
    now = utcnow()
    stages = [Stage(institution_id=sandbox.institution_id, key=stage.key, name=stage.name, position=stage.position)
              for stage in db.session.scalars(live.select(Stage).order_by(Stage.position))]
    copies: dict[str, Program] = {}
    for program in db.session.scalars(live.select(Program).order_by(Program.created_at, Program.id)):
        copies[program.id] = Program(institution_id=sandbox.institution_id, name=program.name, fee=program.fee,
                                     currency=program.currency)
    if not copies:
        copies = {name: Program(institution_id=sandbox.institution_id, name=name, fee=Decimal(fee), currency=currency)
                  for name, fee, currency in SAMPLE_PROGRAMS}
    cycles = [Cycle(institution_id=sandbox.institution_id, name=cycle.name, opens_at=cycle.opens_at,
                    closes_at=cycle.closes_at, programs=[copies[program.id] for program in cycle.programs])
              for cycle in db.session.scalars(live.select(Cycle).order_by(Cycle.opens_at, Cycle.id))]
    if not cycles:
        cycles = [Cycle(institution_id=sandbox.institution_id, name=f"{now.year}/{now.year + 1} Intake",
                        opens_at=now - timedelta(days=120), closes_at=now + timedelta(days=90),
                        programs=list(copies.values()))]
    db.session.add_all([*stages, *copies.values(), *cycles])
    db.session.flush()
    program_rows = [SimpleNamespace(id=p.id, fee=p.fee, currency=p.currency) for p in copies.values()]
    cycle_rows = [SimpleNamespace(id=c.id, opens_at=c.opens_at, closes_at=c.closes_at) for c in cycles]
    stage_keys = [stage.key for stage in stages]
    applicants, applications, payments, decisions, _ = generate_batch(
        random.Random(), SANDBOX_APPLICATIONS, sandbox, program_rows, cycle_rows, stage_keys, {},
        now, 0, SampleReferences(db.session.get(Institution, sandbox.institution_id).name))
    writer = BulkWriter()
    writer.write(Applicant.__table__, APPLICANT_COLUMNS, applicants)
    writer.write(Application.__table__, APPLICATION_COLUMNS, applications)
    writer.write(Payment.__table__, PAYMENT_COLUMNS, payments)
    writer.write(Decision.__table__, DECISION_COLUMNS, decisions)
    if on_progress:
        on_progress(len(applications))

