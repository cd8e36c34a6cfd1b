"""Staff accounts of an institution: creation, sign-in check, listing, role changes and deactivation."""
from __future__ import annotations

from sqlalchemy import func, select

from core.errors import Conflict, InvalidInput, NotFound
from core.extensions import db
from core.models import Institution, User, utcnow
from core.models.identity import ROLE_ADMIN, ROLES
from core.passwords import hash_password, verify_against_nothing, verify_password
from core.scoping import InstitutionScope


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


def check_credentials(email: str, password: str) -> User | None:
    """The active user of an active institution with these credentials, else None (no reason given)."""
    user = db.session.scalars(select(User).where(User.email == email.strip().lower())).one_or_none()
    if user is None:
        verify_against_nothing(password)
        return None
    if not verify_password(user.password_hash, password) or not user.active:
        return None
    institution = db.session.get(Institution, user.institution_id)
    if institution is None or not institution.is_active:
        return None
    user.last_login_at = utcnow()
    db.session.commit()
    return user


def load_active_user(user_id: str) -> User | None:
    """The session's user, or None once the account or its institution was switched off."""
    user = db.session.get(User, user_id)
    if user is None or not user.active:
        return None
    institution = db.session.get(Institution, user.institution_id)
    return user if institution is not None and institution.is_active else None


def list_users(scope: InstitutionScope) -> list[User]:
    return list(db.session.scalars(scope.select(User).order_by(User.active.desc(), User.email)))


def _other_active_admins(scope: InstitutionScope, user_id: str) -> int:
    return db.session.scalar(scope.select(User, func.count(User.id)).where(
        User.role == ROLE_ADMIN, User.active.is_(True), User.id != user_id))


def set_role(scope: InstitutionScope, user_id: str, role: str) -> User:
    """Change a user's role; the institution always keeps at least one active admin."""
    if role not in ROLES:
        raise InvalidInput(f"role must be one of: {', '.join(ROLES)}", field="role")
    user = scope.require(User, user_id, what="User")
    if user.role == ROLE_ADMIN and role != ROLE_ADMIN and user.active and not _other_active_admins(
            scope, user_id):
        raise Conflict("The institution needs at least one active admin", field="role")
    user.role = role
    db.session.commit()
    return user


def set_active(scope: InstitutionScope, user_id: str, active: bool) -> User:
    """Deactivate (the user is signed out at their next request) or reactivate an account."""
    user = scope.require(User, user_id, what="User")
    if not active and user.role == ROLE_ADMIN and user.active and not _other_active_admins(
            scope, user_id):
        raise Conflict("The institution needs at least one active admin", field="active")
    user.active = active
    db.session.commit()
    return user
