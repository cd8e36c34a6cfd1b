"""Test data builders. Each opens its own app context and returns detached, fully loaded rows."""
from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from decimal import Decimal

from core.db import db
from core.institutions import create_institution, pipeline
from core.accounts.api_keys import create_api_key
from core.models import Applicant, Application, Cycle, Payment, Program, utcnow
from core.scoping import InstitutionScope
from core.applications.references import new_reference
from core.applications.search_text import applicant_search_text
from core.accounts.users import create_user

_counter = itertools.count(1)


def _detached(*rows):
    for row in rows:
        db.session.refresh(row)
        db.session.expunge(row)
    return rows[0] if len(rows) == 1 else rows


class Factory:
    def __init__(self, app):
        self.app = app

    def institution(self, name: str | None = None):
        with self.app.app_context():
            return _detached(create_institution(name or f"Institution {next(_counter)}"))

    def api_key(self, institution, name: str = "test"):
        with self.app.app_context():
            key, raw_key = create_api_key(InstitutionScope(institution.id), name=name)
            return _detached(key), raw_key

    def user(self, institution, role: str = "staff", email: str | None = None, password: str = "correct-horse-1"):
        with self.app.app_context():
            email = email or f"user{next(_counter)}@example.ac.rw"
            return _detached(create_user(InstitutionScope(institution.id), email, password, role=role))

    def stages(self, institution) -> list[str]:
        with self.app.app_context():
            return [stage.key for stage in pipeline(InstitutionScope(institution.id))]

    def program(self, institution, name: str | None = None, fee: str = "50000", currency: str = "RWF"):
        with self.app.app_context():
            program = Program(institution_id=institution.id, name=name or f"Program {next(_counter)}",
                              fee=Decimal(fee), currency=currency)
            db.session.add(program)
            db.session.commit()
            return _detached(program)

    def cycle(self, institution, programs=(), name: str | None = None, opens_at: datetime | None = None,
              closes_at: datetime | None = None):
        with self.app.app_context():
            now = utcnow()
            cycle = Cycle(institution_id=institution.id, name=name or f"Cycle {next(_counter)}",
                          opens_at=opens_at or now - timedelta(days=30),
                          closes_at=closes_at or now + timedelta(days=30),
                          programs=[db.session.get(Program, program.id) for program in programs])
            db.session.add(cycle)
            db.session.commit()
            return _detached(cycle)

    def application(self, institution, *, program=None, cycle=None, first_name: str = "Aimée",
                    last_name: str = "Uwase", email: str | None = None, stage: str = "submitted",
                    decision: str = "none", enrolled: bool = False, paid: bool = False,
                    submitted_at: datetime | None = None, updated_at: datetime | None = None,
                    submitted_by_staff: bool = False, phone: str | None = "+250788000000",
                    language: str | None = None):
        program = program or self.program(institution)
        cycle = cycle or self.cycle(institution, programs=[program])
        with self.app.app_context():
            number = next(_counter)
            email = email or f"applicant{number}@example.com"
            submitted_at = submitted_at or utcnow() - timedelta(minutes=number)
            applicant = Applicant(institution_id=institution.id, first_name=first_name, last_name=last_name,
                                  email=email, phone=phone, language=language,
                                  search_text=applicant_search_text(first_name, last_name, email))
            db.session.add(applicant)
            db.session.flush()
            application = Application(
                reference=new_reference(institution.name, submitted_at),
                institution_id=institution.id, applicant_id=applicant.id, program_id=program.id,
                cycle_id=cycle.id, stage=stage, decision=decision, enrolled=enrolled, paid=paid,
                amount=program.fee, currency=program.currency, submitted_at=submitted_at,
                submitted_by_staff=submitted_by_staff, updated_at=updated_at or submitted_at)
            db.session.add(application)
            db.session.flush()
            if paid:
                db.session.add(Payment(institution_id=institution.id, application_id=application.id,
                                       processor="mpesa", processor_reference=f"MPE{number:09d}",
                                       amount=program.fee, currency=program.currency, status="completed",
                                       completed_at=submitted_at))
            db.session.commit()
            return _detached(application)
