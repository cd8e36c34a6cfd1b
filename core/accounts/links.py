"""Emailed links of staff accounts: invitations (72 h) and password resets (1 h), each usable once.

Any invalid token (expired, used, revoked, unknown, malformed) raises `LinkNotValid` and changes nothing.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from flask_babel import gettext as _
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from core.config import settings
from core.errors import Conflict, InvalidInput, NotFound
from core.db import db
from core.messages.addresses import valid_email
from core.messages.composition import queue_staff_email
from core.messages.runtime import runtime
from core.models import Institution, User, random_token
from core.models.accounts import PasswordReset, StaffInvitation
from core.models.identity import ROLES
from core.accounts.passwords import hash_password
from core.scoping import InstitutionScope
from core.accounts.users import account_in, active_accounts_with_email, check_new_password, normalise_email, set_password

INVITATION_LIFETIME = timedelta(hours=72)
RESET_LIFETIME = timedelta(hours=1)
INVITATION_PATH = "/account/invitation/"
RESET_PATH = "/account/reset/"
TOKEN_LENGTH = 43  # base62: about 256 bits
INVITATION_TEMPLATE = "invitation"
RESET_TEMPLATE = "password_reset"


class LinkNotValid(NotFound):
    """The link is unknown, malformed, expired, already used or withdrawn (which one is not told)."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _well_formed(token: object) -> bool:
    return isinstance(token, str) and len(token) == TOKEN_LENGTH and token.isalnum()


def _link(path: str, token: str) -> str:
    return settings().PUBLIC_BASE_URL.rstrip("/") + path + token


def _now():
    return runtime.clock.now()


# --- invitations --------------------------------------------------------------------------------------------

def invite(scope: InstitutionScope, email: str, role: str, inviter: User, language: str | None = None
           ) -> StaffInvitation:
    """Invite `email` with `role` and email the link, replacing any earlier invitation of that address.

    Raises Conflict when the institution already has an account with this email.
    """
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    email = normalise_email(email)
    if not valid_email(email):
        raise InvalidInput(_("Enter a valid email address."), field="email")
    if role not in ROLES:
        raise InvalidInput(_("Choose a role."), field="role")
    if account_in(scope, email) is not None:
        raise Conflict(_("Your institution already has an account with this email."), field="email")
    invitation = db.session.scalars(scope.select(StaffInvitation).where(StaffInvitation.email == email)
                                    .with_for_update()).one_or_none()
    if invitation is None:
        invitation = StaffInvitation(institution_id=scope.institution_id, email=email)
        db.session.add(invitation)
    invitation.role = role
    invitation.invited_by = inviter.id
    invitation.accepted_at = invitation.revoked_at = None
    _send_invitation(scope, invitation, institution, inviter, language)
    try:
        db.session.commit()
    except IntegrityError:  # another admin invited the same address at the same moment
        db.session.rollback()
        raise Conflict(_("This address was invited a moment ago; see the pending invitations."),
                       field="email") from None
    return invitation


def _send_invitation(scope: InstitutionScope, invitation: StaffInvitation, institution: Institution,
                     inviter: User, language: str | None) -> None:
    token = random_token(TOKEN_LENGTH)
    now = _now()
    invitation.token_hash = _digest(token)
    invitation.sent_at = now
    invitation.expires_at = now + INVITATION_LIFETIME
    role_names = {"admin": _("an admin"), "staff": _("a staff member")}
    queue_staff_email(scope, invitation.email, INVITATION_TEMPLATE, language, {
        "institution": institution.name, "inviter": inviter.name or inviter.email,
        "role": role_names.get(invitation.role, invitation.role), "link": _link(INVITATION_PATH, token),
        "hours": int(INVITATION_LIFETIME.total_seconds() // 3600)})


def pending_invitations(scope: InstitutionScope) -> list[StaffInvitation]:
    """Invitations not yet answered nor revoked (expired ones included: they can be sent again)."""
    return list(db.session.scalars(scope.select(StaffInvitation).where(
        StaffInvitation.accepted_at.is_(None), StaffInvitation.revoked_at.is_(None))
        .order_by(StaffInvitation.sent_at.desc())))


def _pending(scope: InstitutionScope, invitation_id: str) -> StaffInvitation:
    invitation = db.session.scalars(scope.select(StaffInvitation).where(
        StaffInvitation.id == invitation_id, StaffInvitation.accepted_at.is_(None),
        StaffInvitation.revoked_at.is_(None)).with_for_update()).one_or_none()
    if invitation is None:
        raise NotFound(_("Invitation not found"))
    return invitation


def resend_invitation(scope: InstitutionScope, invitation_id: str, inviter: User, language: str | None = None
                      ) -> StaffInvitation:
    """A fresh link (and 72 hours) for a pending invitation; the link sent before stops working."""
    invitation = _pending(scope, invitation_id)
    _send_invitation(scope, invitation, scope.institution(), inviter, language)
    db.session.commit()
    return invitation


def revoke_invitation(scope: InstitutionScope, invitation_id: str) -> StaffInvitation:
    invitation = _pending(scope, invitation_id)
    invitation.revoked_at = _now()
    db.session.commit()
    return invitation


@dataclass(frozen=True)
class OpenInvitation:
    """What the set-password page of an invitation shows."""
    email: str
    institution: str


def _usable_invitation(token: object) -> StaffInvitation:
    if not _well_formed(token):
        raise LinkNotValid("This link is not valid")
    invitation = db.session.scalars(select(StaffInvitation).where(
        StaffInvitation.token_hash == _digest(token), StaffInvitation.accepted_at.is_(None),
        StaffInvitation.revoked_at.is_(None), StaffInvitation.expires_at > _now())).one_or_none()
    if invitation is None:
        raise LinkNotValid("This link is not valid")
    return invitation


def open_invitation(token: object) -> OpenInvitation:
    """The invitation a link stands for, if it can still be used; LinkNotValid otherwise."""
    invitation = _usable_invitation(token)
    institution = db.session.get(Institution, invitation.institution_id)
    return OpenInvitation(email=invitation.email, institution=institution.name if institution else "")


def accept_invitation(token: object, password: str) -> User:
    """Create the invited account with the invitee's own password; the link is used up.

    The password rules are checked first (a refused password leaves the link usable)."""
    invitation = _usable_invitation(token)
    check_new_password(password, invitation.email)
    now = _now()
    consumed = db.session.execute(update(StaffInvitation).where(
        StaffInvitation.id == invitation.id, StaffInvitation.token_hash == _digest(token),
        StaffInvitation.accepted_at.is_(None), StaffInvitation.revoked_at.is_(None),
        StaffInvitation.expires_at > now).values(accepted_at=now)).rowcount
    scope = InstitutionScope(invitation.institution_id)
    if not consumed or account_in(scope, invitation.email) is not None:
        db.session.rollback()
        raise LinkNotValid("This link is not valid")
    user = User(institution_id=invitation.institution_id, email=invitation.email, role=invitation.role,
                password_hash=hash_password(password))
    db.session.add(user)
    db.session.commit()
    return user


# --- password resets ----------------------------------------------------------------------------------------

def request_password_reset(email: str, language: str | None = None) -> int:
    """Email a reset link to each active account with this address (one per institution). Returns how many
    links were sent, which callers must not reveal: the page answers the same for an unknown address."""
    accounts = active_accounts_with_email(email)
    now = _now()
    for user in accounts:
        token = random_token(TOKEN_LENGTH)
        db.session.add(PasswordReset(user_id=user.id, token_hash=_digest(token), created_at=now,
                                     expires_at=now + RESET_LIFETIME))
        institution = db.session.get(Institution, user.institution_id)
        queue_staff_email(InstitutionScope(user.institution_id), user.email, RESET_TEMPLATE, language, {
            "institution": institution.name, "link": _link(RESET_PATH, token),
            "minutes": int(RESET_LIFETIME.total_seconds() // 60)})
    db.session.commit()
    return len(accounts)


def _usable_reset(token: object) -> tuple[PasswordReset, User]:
    if not _well_formed(token):
        raise LinkNotValid("This link is not valid")
    row = db.session.execute(select(PasswordReset, User).join(User, User.id == PasswordReset.user_id).where(
        PasswordReset.token_hash == _digest(token), PasswordReset.used_at.is_(None),
        PasswordReset.expires_at > _now(), User.active.is_(True))).one_or_none()
    if row is None:
        raise LinkNotValid("This link is not valid")
    return row[0], row[1]


def open_reset(token: object) -> OpenInvitation:
    """The account a reset link stands for, if the link can still be used; LinkNotValid otherwise."""
    _, user = _usable_reset(token)
    institution = db.session.get(Institution, user.institution_id)
    return OpenInvitation(email=user.email, institution=institution.name if institution else "")


def reset_password(token: object, password: str) -> User:
    """Set the account's new password and end all its sessions; this link and every other outstanding reset
    link of the account are used up. A refused password leaves the link usable."""
    reset, user = _usable_reset(token)
    check_new_password(password, user.email)
    now = _now()
    consumed = db.session.execute(update(PasswordReset).where(
        PasswordReset.id == reset.id, PasswordReset.used_at.is_(None), PasswordReset.expires_at > now)
        .values(used_at=now)).rowcount
    if not consumed:
        db.session.rollback()
        raise LinkNotValid("This link is not valid")
    db.session.execute(update(PasswordReset).where(PasswordReset.user_id == user.id,
                                                   PasswordReset.used_at.is_(None)).values(used_at=now))
    set_password(user, password, reason="password_reset")
    return user
