"""Institutions, their stage pipeline and staff users."""
from __future__ import annotations

from sqlalchemy import func, select

from core.errors import Conflict, InvalidInput, NotFound
from core.extensions import db
from core.models import Institution, Stage, User
from core.models.identity import ROLES
from core.passwords import hash_password
from core.scoping import InstitutionScope

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


def create_user(scope: InstitutionScope, email: str, password: str, role: str = "staff", name: str = "") -> User:
    if scope.institution() is None:
        raise NotFound("Institution not found")
    if role not in ROLES:
        raise InvalidInput(f"role must be one of: {', '.join(ROLES)}", field="role")
    email = email.strip().lower()
    if "@" not in email:
        raise InvalidInput("email must be an email address", field="email")
    if len(password) < 8:
        raise InvalidInput("password must be at least 8 characters", field="password")
    if db.session.scalar(select(func.count()).select_from(User).where(User.email == email)):
        raise Conflict("A user with this email already exists", field="email")
    user = User(institution_id=scope.institution_id, email=email, password_hash=hash_password(password), role=role,
                name=name)
    db.session.add(user)
    db.session.commit()
    return user


def describe_institution(scope: InstitutionScope) -> dict:
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return {"id": institution.id, "name": institution.name, "status": institution.status,
            "stages": [{"id": stage.key, "name": stage.name} for stage in pipeline(scope)]}
