"""A sign-in halfway through (password right, second factor or enrolment to come), kept in the session cookie;
it grants nothing until `complete_sign_in`."""
from __future__ import annotations

import time
from dataclasses import dataclass

from flask import session

from core.accounts.users import load_active_user

PENDING_KEY = "two_factor_pending"
# Time to open the authenticator app and type a code, or to scan the QR code of a forced enrolment.
PENDING_SECONDS = 600


@dataclass(frozen=True)
class PendingSignIn:
    user: object
    next_url: str | None
    enrol: bool  # the institution requires two-factor of this admin, who has not enrolled yet


def start_pending_sign_in(user, next_url: str | None, enrol: bool) -> None:
    session.pop(PENDING_KEY, None)
    session[PENDING_KEY] = {"user_id": user.id, "expires": int(time.time()) + PENDING_SECONDS,
                            "next": next_url, "enrol": enrol}


def pending_sign_in() -> PendingSignIn | None:
    """The pending sign-in of this browser, or None when there is none, it expired or the account was closed."""
    state = session.get(PENDING_KEY)
    if not isinstance(state, dict) or not isinstance(state.get("expires"), int) or state["expires"] < time.time():
        return None
    user = load_active_user(str(state.get("user_id")))
    if user is None:
        return None
    return PendingSignIn(user=user, next_url=state.get("next"), enrol=bool(state.get("enrol")))


def end_pending_sign_in() -> None:
    session.pop(PENDING_KEY, None)
