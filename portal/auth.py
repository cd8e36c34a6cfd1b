"""Sign-in and sign-out. Failed attempts are throttled per address and email, per address, and per account.

The per-account budget holds however many addresses a guesser uses. It is keyed on the email as typed
(normalised), whether or not an account has it, and the throttled page is the same for every email, so the
lockout tells nobody whether an account exists.
"""
from __future__ import annotations

import hashlib

from flask import current_app, redirect, request, url_for
from flask_login import current_user, login_user, logout_user

from core import two_factor
from core.extensions import limiter
from core.users import check_credentials
from portal import bp
from portal.forms import ActionForm, LoginForm, submitted
from portal.pending_sign_in import start_pending_sign_in
from portal.rendering import render_page
from portal.security import audit, safe_next, staff_required


def _email_digest() -> str:
    email = (request.form.get("email") or "").strip().lower()
    return hashlib.sha256(email.encode()).hexdigest()[:16]


def _address_and_email() -> str:
    return "login:" + (request.remote_addr or "unknown") + ":" + _email_digest()


def _account() -> str:
    return "login-account:" + _email_digest()


def _address() -> str:
    return "login-addr:" + (request.remote_addr or "unknown")


def _failed(response) -> bool:
    return response.status_code == 401


def _throttled(_limit):
    audit("login.throttled", (request.form.get("email") or "")[:100], status=429)
    form = LoginForm()
    form.form_errors.append("Too many failed sign-in attempts. Wait a few minutes, then try again.")
    return render_page("auth/login.html", form=form, next_url=safe_next(request.args.get("next")), status=429,
                       headers={"Retry-After": "60"})


_throttle_options = dict(methods=["POST"], deduct_when=_failed, on_breach=_throttled)


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit(lambda: current_app.config["PORTAL_LOGIN_RATE_LIMIT"], key_func=_address_and_email,
               **_throttle_options)
@limiter.limit(lambda: current_app.config["PORTAL_LOGIN_ADDRESS_RATE_LIMIT"], key_func=_address,
               **_throttle_options)
@limiter.limit(lambda: current_app.config["PORTAL_LOGIN_ACCOUNT_RATE_LIMIT"], key_func=_account,
               **_throttle_options)
def login():
    next_url = safe_next(request.args.get("next"))
    if current_user.is_authenticated:
        return redirect(next_url or url_for("portal.dashboard"))
    form = LoginForm()
    if not form.validate_on_submit():
        return render_page("auth/login.html", form=form, next_url=next_url,
                           status=422 if request.method == "POST" else 200)
    user = check_credentials(form.email.data, form.password.data)
    if user is None:
        audit("login.failed", form.email.data.strip().lower()[:100])
        form.form_errors.append("That email and password do not match an active account.")
        return render_page("auth/login.html", form=form, next_url=next_url, status=401)
    if two_factor.needs_second_step(user):
        enrol = not two_factor.is_enrolled(user)
        start_pending_sign_in(user, next_url, enrol=enrol)
        audit("login.two_factor_enrolment_due" if enrol else "login.two_factor_due", user.id, user=user)
        return redirect(url_for("portal.two_factor_enrol_at_sign_in" if enrol else "portal.two_factor_sign_in"))
    complete_sign_in(user)
    return redirect(next_url or url_for("portal.dashboard"))


def complete_sign_in(user) -> None:
    """Sign `user` in (every factor checked) and audit it."""
    login_user(user)
    audit("login", user.id, user=user)


@bp.post("/logout")
@staff_required
def logout():
    submitted(ActionForm())
    audit("logout", current_user.id)
    logout_user()
    return redirect(url_for("portal.login"))
