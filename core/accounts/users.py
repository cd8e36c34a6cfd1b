"""Staff accounts of an institution: creation, sign-in check, listing, role changes, deactivation and passwords.

Accounts are per institution: (institution, email) is unique, not the email.
"""
from __future__ import annotations

from flask_babel import gettext as _
from sqlalchemy import func, select

from core.errors import Conflict, InvalidInput, NotFound
from core.db import db
from core.models import Institution, User, utcnow
from core.models.identity import ROLE_ADMIN, ROLES
from core.accounts.passwords import hash_password, password_problem, verify_against_nothing, verify_password
from core.scoping import InstitutionScope
from core.accounts.sessions import end_all_sessions


def normalise_email(email: str) -> str:
    return (email or "").strip().lower()


def check_new_password(password: str, email: str) -> None:
    """InvalidInput (field `password`) when the password breaks a rule of core.accounts.passwords.password_problem."""
    problem = password_problem(password or "", email)
    if problem:
        raise InvalidInput(problem, field="password")


def create_user(scope: InstitutionScope, email: str, password: str, role: str = "staff", name: str = "") -> User:
    if scope.institution() is None:
        raise NotFound("Institution not found")
    if role not in ROLES:
        raise InvalidInput(f"role must be one of: {', '.join(ROLES)}", field="role")
    email = normalise_email(email)
    if "@" not in email:
        raise InvalidInput("email must be an email address", field="email")
    check_new_password(password, email)
    if account_in(scope, email) is not None:
        raise Conflict(_("Your institution already has an account with this email."), field="email")
    user = User(institution_id=scope.institution_id, email=email, password_hash=hash_password(password), role=role,
                name=name)
    db.session.add(user)
    db.session.commit()
    return user


def account_in(scope: InstitutionScope, email: str) -> User | None:
    """The institution's account with this email (active or not), or None."""
    return db.session.scalars(scope.select(User).where(User.email == normalise_email(email))).one_or_none()


def active_accounts_with_email(email: str) -> list[User]:
    """Every active account with this email at an active institution (one per institution), oldest first."""
    accounts = db.session.scalars(select(User).where(User.email == normalise_email(email), User.active.is_(True))
                                  .order_by(User.created_at, User.id))
    return [user for user in accounts if _institution_is_active(user)]


def _institution_is_active(user: User) -> bool:
    institution = db.session.get(Institution, user.institution_id)
    return institution is not None and institution.is_active


def check_credentials(email: str, password: str) -> list[User]:
    """The active accounts (of active institutions) with this email whose password is `password`; empty when none."""
    accounts = active_accounts_with_email(email)
    if not accounts:
        verify_against_nothing(password)
        return []
    return [user for user in accounts if user.password_hash and verify_password(user.password_hash, password)]


def record_sign_in(user: User) -> None:
    user.last_login_at = utcnow()
    db.session.commit()


def change_password(user: User, current_password: str, new_password: str) -> None:
    """The signed-in user's own change: the current password is required. Ends every session of the user
    (the caller starts a fresh one for the browser that made the change)."""
    if not verify_password(user.password_hash, current_password or ""):
        raise InvalidInput(_("The current password is not right."), field="current_password")
    if verify_password(user.password_hash, new_password or ""):
        raise InvalidInput(_("The new password must differ from the current one."), field="password")
    check_new_password(new_password, user.email)
    set_password(user, new_password, reason="password_changed")


def set_password(user: User, password: str, *, reason: str) -> None:
    """Store a new password (already checked against the rules) and end every session of the user."""
    user.password_hash = hash_password(password)
    end_all_sessions(user.id, reason, commit=False)
    db.session.commit()


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
    if user.role != role:
        user.role = role
        end_all_sessions(user.id, "role_changed", commit=False)
    db.session.commit()
    return user


def set_active(scope: InstitutionScope, user_id: str, active: bool) -> User:
    """Deactivate (the user is signed out at their next request) or reactivate an account."""
    user = scope.require(User, user_id, what="User")
    if not active and user.role == ROLE_ADMIN and user.active and not _other_active_admins(
            scope, user_id):
        raise Conflict("The institution needs at least one active admin", field="active")
    user.active = active
    if not active:
        end_all_sessions(user.id, "deactivated", commit=False)
    db.session.commit()
    return user
