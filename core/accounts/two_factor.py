"""Two-factor sign-in of staff: TOTP (RFC 6238, with pyotp) and single-use recovery codes.

Storage, replay protection and the sessions it ends: docs/portal.md, "Two-factor sign-in".
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass

import pyotp
from sqlalchemy import delete, func, or_, select, update

from core.errors import Conflict, NotFound
from core.db import db
from core.models import RecoveryCode, TwoFactorCredential, User, utcnow
from core.models.accounts import StaffSession
from core.models.identity import ROLE_ADMIN
from core.accounts.passwords import verify_password
from core.accounts.sessions import end_all_sessions
from core.scoping import InstitutionScope
from core.secret_key import decrypted_or_none, derived_fernet, key_ring

ISSUER = "Karibu"
RECOVERY_CODE_COUNT = 10
_RECOVERY_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32: no I, L, O, U
_RECOVERY_LENGTH = 16
_TOTP_CODE = re.compile(r"^\d{6}$")
_ALLOWED_DRIFT_STEPS = 1
TWO_FACTOR_LABEL = b"karibu two-factor secrets v1"  # the HKDF label of the secrets' key

CODE = "code"
RECOVERY = "recovery code"


@dataclass(frozen=True)
class TwoFactorStatus:
    enabled: bool
    required: bool  # the institution requires two-factor sign-in for admins and this user is an admin
    recovery_codes_left: int


@dataclass(frozen=True)
class Enrolment:
    """A pending enrolment: what the user types or scans into their authenticator app."""
    secret: str
    provisioning_uri: str


def _encrypt(secret: str) -> str:
    return derived_fernet(key_ring(), TWO_FACTOR_LABEL).encrypt(secret.encode("ascii")).decode("ascii")


def _decrypt(ciphertext: str) -> str | None:
    """The secret, or None when it was encrypted under a key no longer in the key ring (its codes can no longer
    match)."""
    secret = decrypted_or_none(derived_fernet(key_ring(), TWO_FACTOR_LABEL), ciphertext.encode("ascii"))
    return None if secret is None else secret.decode("ascii")


def _credential(user: User) -> TwoFactorCredential | None:
    return db.session.get(TwoFactorCredential, user.id)


def is_enrolled(user: User) -> bool:
    credential = _credential(user)
    return credential is not None and credential.confirmed_at is not None


def admins_must_use_two_factor(scope: InstitutionScope) -> bool:
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return institution.require_admin_two_factor


def is_required(user: User) -> bool:
    """The user is an admin of an institution that requires two-factor sign-in for admins."""
    return user.is_admin and admins_must_use_two_factor(InstitutionScope(user.institution_id))


def must_enrol(user: User) -> bool:
    """Required but not set up: the user may do nothing but enrol (or sign out)."""
    return is_required(user) and not is_enrolled(user)


def needs_second_step(user: User) -> bool:
    """A correct password is not enough to sign this user in: a code must follow, or a forced enrolment."""
    return is_enrolled(user) or must_enrol(user)


def status(user: User) -> TwoFactorStatus:
    enabled = is_enrolled(user)
    left = db.session.scalar(select(func.count()).select_from(RecoveryCode).where(
        RecoveryCode.user_id == user.id, RecoveryCode.used_at.is_(None))) if enabled else 0
    return TwoFactorStatus(enabled=enabled, required=is_required(user), recovery_codes_left=left)


def start_enrolment(user: User) -> Enrolment:
    """A secret for the user's authenticator, pending until `confirm_enrolment` (a pending one is reused)."""
    credential = _credential(user)
    if credential is not None and credential.confirmed_at is not None:
        raise Conflict("Two-factor sign-in is already on. Turn it off first to enrol another device.")
    secret = _decrypt(credential.secret_ciphertext) if credential is not None else None
    if secret is None:
        secret = pyotp.random_base32()
        if credential is None:
            credential = TwoFactorCredential(user_id=user.id, secret_ciphertext=_encrypt(secret))
            db.session.add(credential)
        else:
            credential.secret_ciphertext = _encrypt(secret)
        db.session.commit()
    uri = pyotp.TOTP(secret).provisioning_uri(name=user.email, issuer_name=ISSUER)
    return Enrolment(secret=secret, provisioning_uri=uri)


def confirm_enrolment(user: User, code: str) -> list[str] | None:
    """Switch two-factor on when `code` matches the pending secret and end the user's sessions.

    Returns the new recovery codes, or None when the code does not match.
    """
    credential = _credential(user)
    if credential is None or credential.confirmed_at is not None:
        raise Conflict("There is no enrolment waiting for a code. Start again.")
    if not _accept_totp(credential, "".join((code or "").split())):
        return None
    credential.confirmed_at = utcnow()
    codes = _replace_recovery_codes(user)
    end_all_sessions(user.id, "two_factor_enrolled", commit=False)
    db.session.commit()
    return codes


def verify(user: User, code: str) -> str | None:
    """Which factor `code` is (`CODE` or `RECOVERY`) when it is valid and unused for this user, else None.

    A valid code is used up here: the same TOTP step or recovery code never passes twice.
    """
    credential = _credential(user)
    if credential is None or credential.confirmed_at is None:
        return None
    typed = "".join((code or "").split())
    if _TOTP_CODE.match(typed):
        return CODE if _accept_totp(credential, typed) else None
    return RECOVERY if _use_recovery_code(user, typed) else None


def regenerate_recovery_codes(user: User) -> list[str]:
    """Ten new recovery codes; the old ones stop working."""
    if not is_enrolled(user):
        raise Conflict("Turn two-factor sign-in on first.")
    codes = _replace_recovery_codes(user)
    db.session.commit()
    return codes


def disable(user: User, password_or_code: str) -> bool:
    """Turn two-factor sign-in off, proven by the account's password or a valid code; False when the proof is
    wrong. Refused (Conflict) while the institution requires it of this admin.
    """
    if not is_enrolled(user):
        raise Conflict("Two-factor sign-in is already off.")
    if is_required(user):
        raise Conflict("Your institution requires two-factor sign-in for admins: it cannot be turned off.")
    proof = password_or_code or ""
    if not verify_password(user.password_hash, proof) and verify(user, proof) is None:
        return False
    _forget(user)
    db.session.commit()
    return True


def reset(scope: InstitutionScope, email: str) -> tuple[User, bool]:
    """Operators only (CLI): remove the two-factor set-up of the user with this email (phone and recovery codes
    lost), so they sign in with their password and may enrol again; whether there was one."""
    user = db.session.scalars(scope.select(User).where(User.email == email.strip().lower())).one_or_none()
    if user is None:
        raise NotFound("User not found")
    had = _credential(user) is not None
    _forget(user)
    db.session.commit()
    return user, had


def set_admin_requirement(scope: InstitutionScope, required: bool, *, keep_session_id: str | None = None) -> bool:
    """Require (or stop requiring) two-factor for the institution's admins; whether it changed.

    Requiring it ends the sessions of unenrolled admins except `keep_session_id`.
    """
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    changed = institution.require_admin_two_factor != required
    institution.require_admin_two_factor = required
    if changed and required:
        enrolled = select(TwoFactorCredential.user_id).where(TwoFactorCredential.confirmed_at.is_not(None))
        admins_without = scope.select(User, User.id).where(User.role == ROLE_ADMIN, User.id.not_in(enrolled))
        db.session.execute(
            update(StaffSession)
            .where(StaffSession.user_id.in_(admins_without), StaffSession.ended_at.is_(None),
                   StaffSession.id != (keep_session_id or ""))
            .values(ended_at=utcnow(), ended_reason="two_factor_required")
            .execution_options(synchronize_session=False))
    db.session.commit()
    return changed


def _forget(user: User) -> None:
    db.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    db.session.execute(delete(TwoFactorCredential).where(TwoFactorCredential.user_id == user.id))


def _accept_totp(credential: TwoFactorCredential, code: str) -> bool:
    """True when `code` is the code of a step near now that is newer than the last accepted one (recorded)."""
    secret = _decrypt(credential.secret_ciphertext)
    if secret is None or not _TOTP_CODE.match(code or ""):
        return False
    totp = pyotp.TOTP(secret)
    current = totp.timecode(time.time())
    for step in range(current - _ALLOWED_DRIFT_STEPS, current + _ALLOWED_DRIFT_STEPS + 1):
        if credential.last_used_step is not None and step <= credential.last_used_step:
            continue
        if hmac.compare_digest(totp.generate_otp(step), code):
            return _claim_step(credential, step)
    return False


def _claim_step(credential: TwoFactorCredential, step: int) -> bool:
    claimed = db.session.execute(
        update(TwoFactorCredential)
        .where(TwoFactorCredential.user_id == credential.user_id,
               or_(TwoFactorCredential.last_used_step.is_(None), TwoFactorCredential.last_used_step < step))
        .values(last_used_step=step)
        .execution_options(synchronize_session=False)).rowcount == 1
    db.session.commit()
    db.session.refresh(credential)
    return claimed


def _normalise_recovery_code(code: str) -> str:
    return re.sub(r"[\s-]", "", code).upper()


def _hash_recovery_code(code: str) -> str:
    return hashlib.sha256(_normalise_recovery_code(code).encode("ascii", "replace")).hexdigest()


def _use_recovery_code(user: User, code: str) -> bool:
    if len(_normalise_recovery_code(code)) != _RECOVERY_LENGTH:
        return False
    used = db.session.execute(
        update(RecoveryCode)
        .where(RecoveryCode.user_id == user.id, RecoveryCode.code_hash == _hash_recovery_code(code),
               RecoveryCode.used_at.is_(None))
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)).rowcount == 1
    db.session.commit()
    return used


def _new_recovery_code() -> str:
    raw = "".join(secrets.choice(_RECOVERY_ALPHABET) for _ in range(_RECOVERY_LENGTH))
    return "-".join(raw[index:index + 4] for index in range(0, _RECOVERY_LENGTH, 4))


def _replace_recovery_codes(user: User) -> list[str]:
    db.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    codes = [_new_recovery_code() for _ in range(RECOVERY_CODE_COUNT)]
    db.session.add_all(RecoveryCode(user_id=user.id, code_hash=_hash_recovery_code(code)) for code in codes)
    return codes
