"""Sign-in (with the institution choice and throttling), sign-out, "forgot password" and the emailed links
(invitation, reset) of staff accounts."""
from __future__ import annotations

import hashlib
import time

from flask import flash, redirect, request, session, url_for
from flask_babel import get_locale
from flask_babel import gettext as _
from flask_login import current_user, login_user, logout_user

from core.accounts import sso, two_factor
from core.accounts.links import (
    LinkNotValid, accept_invitation, open_invitation, open_reset, request_password_reset, reset_password,
)
from core.config import settings
from core.errors import InvalidInput
from core.db import db
from core.messages.addresses import valid_email
from core.models import User
from core.accounts.sessions import end_session, start_session
from core.accounts.users import check_credentials, load_active_user, normalise_email, record_sign_in
from portal import bp
from portal.accounts.forms import ChooseAccountForm, ForgotPasswordForm, LoginForm, SetPasswordForm
from portal.forms import ActionForm, submitted
from portal.limiter import limiter
from portal.accounts.pending_sign_in import start_pending_sign_in
from portal.rendering import render_page
from portal.security import SESSION_RECORD_KEY, audit, bind_session_to_client, safe_next, staff_required

# A sign-in waiting for its institution to be chosen (several accounts matched) is kept this long.
PENDING_SIGN_IN_SECONDS = 300
PENDING_SIGN_IN_KEY = "pending_sign_in"
# "Forgot password" answers no sooner than this, so an address with accounts (links written and queued) and
# one without take the same time.
FORGOT_RESPONSE_SECONDS = 0.5


def _email_digest(value: str | None = None) -> str:
    email = normalise_email(value if value is not None else request.form.get("email") or "")
    return hashlib.sha256(email.encode()).hexdigest()[:16]


def _address_and_email() -> str:
    return "login:" + (request.remote_addr or "unknown") + ":" + _email_digest()


def _account() -> str:
    return "login-account:" + _email_digest()


def _address() -> str:
    return "login-addr:" + (request.remote_addr or "unknown")


def typed_email_for_audit(value: str | None) -> str:
    """What the audit log may keep of an email typed on a public form: the address when it looks like one;
    a placeholder otherwise (someone typed a password into the email field: it must not be stored)."""
    email = normalise_email(value or "")
    return email[:100] if valid_email(email) else "(not an email address)"


def _failed(response) -> bool:
    return response.status_code == 401


def _throttled(_limit):
    audit("login.throttled", typed_email_for_audit(request.form.get("email")), status=429)
    form = LoginForm()
    form.form_errors.append(_("Too many failed sign-in attempts. Wait a few minutes, then try again."))
    return render_page("auth/login.html", form=form, next_url=safe_next(request.args.get("next")), status=429,
                       headers={"Retry-After": "60"})


_throttle_options = dict(methods=["POST"], deduct_when=_failed, on_breach=_throttled)


def complete_sign_in(user: User) -> None:
    """Sign `user` in once every factor is checked: a new session bound to this client, with its server-side
    record, and the `login` audit entry."""
    session.clear()
    record = start_session(user, user_agent=request.user_agent.string, address=request.remote_addr or "")
    login_user(user)
    bind_session_to_client()
    session[SESSION_RECORD_KEY] = record.id
    record_sign_in(user)
    audit("login", user.id, user=user)


def renew_session_record(user: User) -> None:
    """A signed-in browser whose sessions were all ended (two-factor turned on) goes on under a new record;
    copies of its old cookie stay dead."""
    session[SESSION_RECORD_KEY] = start_session(user, user_agent=request.user_agent.string,
                                                address=request.remote_addr or "").id


def _password_accepted(user: User, next_url: str | None):
    """The password (and, with several accounts, the institution) is right: ask for the second factor when the
    account has one (or must enrol one first: also a break-glass admin of an institution that requires its
    university account), else finish signing in."""
    if two_factor.needs_second_step(user) or sso.is_break_glass(user):
        enrol = not two_factor.is_enrolled(user)
        start_pending_sign_in(user, next_url, enrol=enrol)
        audit("login.two_factor_enrolment_due" if enrol else "login.two_factor_due", user.id, user=user)
        return redirect(url_for("portal.two_factor_enrol_at_sign_in" if enrol else "portal.two_factor_sign_in"))
    complete_sign_in(user)
    return redirect(next_url or url_for("portal.dashboard"))


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit(lambda: settings().PORTAL_LOGIN_RATE_LIMIT, key_func=_address_and_email,
               **_throttle_options)
@limiter.limit(lambda: settings().PORTAL_LOGIN_ADDRESS_RATE_LIMIT, key_func=_address,
               **_throttle_options)
@limiter.limit(lambda: settings().PORTAL_LOGIN_ACCOUNT_RATE_LIMIT, key_func=_account,
               **_throttle_options)
def login():
    next_url = safe_next(request.args.get("next"))
    if current_user.is_authenticated:
        return redirect(next_url or url_for("portal.dashboard"))
    form = LoginForm()
    if not form.validate_on_submit():
        return render_page("auth/login.html", form=form, next_url=next_url,
                           status=422 if request.method == "POST" else 200)
    accounts = [user for user in check_credentials(form.email.data, form.password.data)
                if not sso.password_sign_in_refused(user)]
    requiring = sso.institution_requiring_sso(form.email.data) if not accounts else None
    if requiring:
        # 401 like a wrong password (the throttle counts it), whether or not the password was right.
        audit("login.sso_required", typed_email_for_audit(form.email.data))
        form.form_errors.append(_("%(institution)s signs its staff in with their university account: use “Sign in "
                                  "with your university account” below.", institution=requiring))
        return render_page("auth/login.html", form=form, next_url=next_url, status=401)
    if not accounts:
        audit("login.failed", typed_email_for_audit(form.email.data))
        form.form_errors.append(_("That email and password do not match an active account."))
        return render_page("auth/login.html", form=form, next_url=next_url, status=401)
    if len(accounts) == 1:
        return _password_accepted(accounts[0], next_url)
    session.clear()
    session[PENDING_SIGN_IN_KEY] = {"accounts": [user.id for user in accounts], "at": int(time.time()),
                                    "next": next_url}
    return redirect(url_for("portal.login_choose_account"))


def _pending_accounts() -> tuple[list[User], str | None]:
    """The accounts of a sign-in waiting for its institution (from the signed session), and its next page."""
    pending = session.get(PENDING_SIGN_IN_KEY)
    if not isinstance(pending, dict) or time.time() - pending.get("at", 0) > PENDING_SIGN_IN_SECONDS:
        return [], None
    accounts = [load_active_user(user_id) for user_id in pending.get("accounts", [])]
    return [user for user in accounts if user is not None], safe_next(pending.get("next"))


def _account_choices(accounts: list[User]) -> list[tuple[str, str]]:
    from core.institutions import institution_name
    from core.scoping import InstitutionScope
    return [(user.id, institution_name(InstitutionScope(user.institution_id))) for user in accounts]


@bp.route("/login/institution", methods=["GET", "POST"])
def login_choose_account():
    """Second step of a sign-in whose email and password open accounts at several institutions."""
    accounts, next_url = _pending_accounts()
    if not accounts:
        session.pop(PENDING_SIGN_IN_KEY, None)
        flash(_("Sign in again: the choice of institution waited too long."), "info")
        return redirect(url_for("portal.login"))
    form = ChooseAccountForm()
    form.account.choices = _account_choices(accounts)
    if not form.validate_on_submit():
        return render_page("auth/choose_account.html", form=form,
                           status=422 if request.method == "POST" else 200)
    chosen = next(user for user in accounts if user.id == form.account.data)
    return _password_accepted(chosen, next_url)


@bp.post("/logout")
@staff_required
def logout():
    submitted(ActionForm())
    audit("logout", current_user.id)
    end_session(current_user, session.get(SESSION_RECORD_KEY, ""), "sign_out")
    logout_user()
    session.clear()
    return redirect(url_for("portal.login"))


# --- forgot password ----------------------------------------------------------------------------------------

def _forgot_address() -> str:
    return "forgot-addr:" + (request.remote_addr or "unknown")


def _forgot_email() -> str:
    return "forgot-email:" + _email_digest()


def _forgot_throttled(_limit):
    audit("password.reset_throttled", typed_email_for_audit(request.form.get("email")), status=429)
    form = ForgotPasswordForm()
    form.form_errors.append(_("Too many requests. Wait a while, then try again."))
    return render_page("auth/forgot.html", form=form, status=429, headers={"Retry-After": "600"})


@bp.route("/login/forgot", methods=["GET", "POST"])
@limiter.limit(lambda: settings().PORTAL_FORGOT_ADDRESS_RATE_LIMIT, key_func=_forgot_address,
               methods=["POST"], on_breach=_forgot_throttled)
@limiter.limit(lambda: settings().PORTAL_FORGOT_EMAIL_RATE_LIMIT, key_func=_forgot_email,
               methods=["POST"], on_breach=_forgot_throttled)
def forgot_password():
    """Email a reset link. The answer is the same page, after the same time, whether or not an account has
    the address."""
    form = ForgotPasswordForm()
    if not form.validate_on_submit():
        return render_page("auth/forgot.html", form=form, status=422 if request.method == "POST" else 200)
    started = time.perf_counter()
    request_password_reset(form.email.data, language=str(get_locale() or "en"))
    audit("password.reset_requested", typed_email_for_audit(form.email.data))
    time.sleep(max(0.0, FORGOT_RESPONSE_SECONDS - (time.perf_counter() - started)))
    return render_page("auth/forgot_sent.html", email=normalise_email(form.email.data))


# --- emailed links: reset and invitation --------------------------------------------------------------------

def _link_not_valid(action: str):
    db.session.rollback()
    audit(action, status=410)
    return render_page("auth/link_not_valid.html", status=410)


def _set_password_through_link(token: str, open_link, use_link, template: str, refused: str, done: str,
                               done_message: str):
    """The page of an emailed link (a password reset or an invitation): the link is checked on every visit,
    spent only by a valid new password; afterwards the browser starts over at sign-in, signed out."""
    try:
        account = open_link(token)
    except LinkNotValid:
        return _link_not_valid(refused)
    form = SetPasswordForm()
    if not form.validate_on_submit():
        return render_page(template, form=form, account=account, status=422 if request.method == "POST" else 200)
    try:
        user = use_link(token, form.password.data)
    except LinkNotValid:
        return _link_not_valid(refused)
    except InvalidInput as error:
        form.password.errors.append(error.message)
        return render_page(template, form=form, account=account, status=422)
    audit(done, user.id, user=user)
    if current_user.is_authenticated:
        logout_user()
    session.clear()
    flash(done_message, "ok")
    return redirect(url_for("portal.login"))


@bp.after_request
def _token_pages_private(response):
    """A reset or invitation link is a credential: every answer of its page (refusals included) stays out of
    caches and Referer headers."""
    if request.endpoint in ("portal.password_reset", "portal.accept_invitation_page"):
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.route("/account/reset/<token>", methods=["GET", "POST"])
def password_reset(token: str):
    return _set_password_through_link(
        token, open_reset, reset_password, "auth/reset.html", "password.reset_link_refused", "password.reset",
        _("Your new password is set and every session of the account was signed out. Sign in with it."))


@bp.route("/account/invitation/<token>", methods=["GET", "POST"])
def accept_invitation_page(token: str):
    return _set_password_through_link(
        token, open_invitation, accept_invitation, "auth/invitation.html", "invitation.link_refused",
        "invitation.accepted", _("Your account is ready. Sign in with your email and the password you chose."))
