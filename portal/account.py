"""The signed-in user's own account: details, password change, sessions (end one, sign out everywhere) and
their recent audit entries. The two-factor and language sections are included from partials other parts of
the portal supply."""
from __future__ import annotations

from flask import flash, g, redirect, session, url_for
from flask_babel import gettext as _
from flask_login import current_user, logout_user

from core.audit.browsing import AuditFilters, audit_page
from core.errors import InvalidInput, NotFound
from core.accounts.sessions import end_all_sessions, end_session, live_sessions
from core.accounts.users import change_password
from portal import bp
from portal.auth import complete_sign_in
from portal.forms import ActionForm, ChangePasswordForm, submitted
from portal.rendering import render_page
from portal.security import SESSION_RECORD_KEY, audit, staff_required

RECENT_AUDIT_ENTRIES = 20


def _account_page(password_form: ChangePasswordForm | None = None, status: int = 200):
    return render_page(
        "account/index.html", status=status, password_form=password_form or ChangePasswordForm(formdata=None),
        sessions=live_sessions(current_user), current_session=session.get(SESSION_RECORD_KEY),
        audit_rows=audit_page(g.scope, AuditFilters(actor=current_user.email), RECENT_AUDIT_ENTRIES).rows)


@bp.get("/account")
@staff_required
def account():
    return _account_page()


@bp.post("/account/password")
@staff_required
def account_password():
    """Change the password (the current one is required). Every session of the user ends; this browser gets a
    fresh one."""
    form = ChangePasswordForm()
    if not form.validate_on_submit():
        return _account_page(form, status=422)
    user = current_user._get_current_object()
    try:
        change_password(user, form.current_password.data, form.password.data)
    except InvalidInput as error:
        target = form.current_password if error.name == "current_password" else form.password
        target.errors = [*target.errors, error.message]
        audit("password.change_refused", user.id, status=422)
        return _account_page(form, status=422)
    complete_sign_in(user)
    audit("password.change", user.id)  # replaces the "login" that complete_sign_in declared
    flash(_("Your password is changed. Every other browser signed in to your account was signed out."), "ok")
    return redirect(url_for("portal.account"))


@bp.post("/account/sessions/<session_id>/end")
@staff_required
def account_session_end(session_id: str):
    submitted(ActionForm())
    if not end_session(current_user, session_id, "ended_by_user"):
        raise NotFound(_("Session not found"))
    audit("session.end", session_id)
    if session_id == session.get(SESSION_RECORD_KEY):
        logout_user()
        session.clear()
        return redirect(url_for("portal.login"))
    flash(_("That session is signed out."), "ok")
    return redirect(url_for("portal.account") + "#sessions")


@bp.post("/account/sessions/end-all")
@staff_required
def account_sessions_end_all():
    """Sign out everywhere, this browser included."""
    submitted(ActionForm())
    ended = end_all_sessions(current_user.id, "sign_out_everywhere")
    audit("session.end_all", f"{ended} sessions")
    logout_user()
    session.clear()
    flash(_("You are signed out everywhere."), "ok")
    return redirect(url_for("portal.login"))
