"""Credential checks bound to an application: written after a staff member's live lookup for it."""
from __future__ import annotations

from core.db import db
from core.models import ApplicantCheck, Application
from core.scoping import InstitutionScope

NOT_FOUND = "not_found"


def record_check(scope: InstitutionScope, application_id: str, *, issuer: str, level: str, answer: dict,
                 actor: str) -> ApplicantCheck:
    """Store what the registry said (result, reference, candidate name); never the identifiers sent."""
    scope.require(Application, application_id, what="Application")
    record = answer.get("record") or {}
    check = ApplicantCheck(
        institution_id=scope.institution_id, application_id=application_id, issuer=issuer, level=level,
        result=answer.get("result") or NOT_FOUND, reference=record.get("id"),
        candidate_name=(record.get("candidate") or {}).get("full_name"), actor=actor[:100])
    db.session.add(check)
    db.session.commit()
    return check


def checks_for(scope: InstitutionScope, application_id: str) -> list[ApplicantCheck]:
    return list(db.session.scalars(
        scope.select(ApplicantCheck).where(ApplicantCheck.application_id == application_id)
        .order_by(ApplicantCheck.created_at.desc(), ApplicantCheck.id)))
