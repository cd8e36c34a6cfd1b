"""Institutions: their stage pipeline here, their identity for applicants in `identity` (staff users are in
`core.accounts.users`)."""
from __future__ import annotations


from dataclasses import dataclass

from core.errors import InvalidInput, NotFound
from core.db import db
from core.models import Institution, Stage
from core.scoping import InstitutionScope
from core.vocabulary import words

DEFAULT_PIPELINE = (
    ("submitted", "Submitted"),
    ("documents_review", "Documents review"),
    ("interview", "Interview"),
    ("committee_review", "Committee review"),
    ("completed", "Completed"),
)


def create_institution(name: str) -> Institution:
    name = name.strip()
    if not name:
        raise InvalidInput("Institution name must not be empty", field="name")
    institution = Institution(name=name)
    db.session.add(institution)
    db.session.flush()
    for position, (key, label) in enumerate(DEFAULT_PIPELINE):
        db.session.add(Stage(institution_id=institution.id, key=key, name=label, position=position))
    db.session.commit()
    return institution


def pipeline(scope: InstitutionScope) -> list[Stage]:
    return list(db.session.scalars(scope.select(Stage).order_by(Stage.position)))


@dataclass(frozen=True)
class NamedStage:
    """A stage as a person reads it: `name` in the reader's language for a default stage."""
    key: str
    name: str


def stage_label(stage: Stage) -> str:
    """A default pipeline stage that keeps its default name is shown in the reader's language (the vocabulary's
    "stage" kind); a stage an institution named or renamed is shown by its own name."""
    if dict(DEFAULT_PIPELINE).get(stage.key) == stage.name:
        return words("stage", stage.key)
    return stage.name


def named_pipeline(scope: InstitutionScope) -> list[NamedStage]:
    """The pipeline in order, each stage with the name a person reads (the API keeps the stored names)."""
    return [NamedStage(stage.key, stage_label(stage)) for stage in pipeline(scope)]


def describe_institution(scope: InstitutionScope) -> dict:
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return {"id": institution.id, "name": institution.name, "status": institution.status,
            "stages": [{"id": stage.key, "name": stage.name} for stage in pipeline(scope)]}


def institution_name(scope: InstitutionScope) -> str:
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return institution.name
