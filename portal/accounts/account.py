"""The signed-in user's own account page: details, password change, sessions and recent audit entries
(two-factor and language sections come from partials)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from flask import flash, g, redirect, session, url_for
from flask_babel import gettext as _
from flask_login import current_user, logout_user

from core.audit.browsing import AuditFilters, audit_page, audit_targets, target_label
from core.errors import InvalidInput, NotFound
from core.accounts.sessions import describe_user_agent, end_all_sessions, end_session, live_sessions
from core.models.accounts import StaffSession
from core.accounts.users import change_password
from portal import bp
from portal.accounts.sign_in import complete_sign_in
from portal.accounts.forms import ChangePasswordForm
from portal.forms import ActionForm, submitted
from portal.rendering import datetime_text, render_page
from portal.security import SESSION_RECORD_KEY, audit, staff_required

RECENT_AUDIT_ENTRIES = 20


@dataclass(frozen=True)
class SessionRow:
    """A signed-in browser as the account page lists it: its record, its name ("Chrome on Windows") and the
    accessible name of its End button."""
    record: StaffSession
    name: str
    current: bool
    end_label: str


def session_name(user_agent: str | None) -> str:
    """"Chrome on Windows", "Chrome" when the system is unknown, "Unknown browser" when the browser is."""
    device = describe_user_agent(user_agent)
    if device.browser is None:
        return _("Unknown browser")
    if device.system is None:
        return device.browser
    return _("%(browser)s on %(system)s", browser=device.browser, system=device.system)


def _session_rows() -> list[SessionRow]:
    """The user's live sessions, each End button named after its session: browser, system and last activity;
    the address when two would otherwise read the same, and a number when even that is shared."""
    current_id = session.get(SESSION_RECORD_KEY)
    records = live_sessions(current_user)
    names = {record.id: session_name(record.user_agent) for record in records}
    when = {record.id: datetime_text(record.last_seen_at) for record in records}

    def described(record: StaffSession, with_address: bool) -> str:
        name = names[record.id]
        if record.id == current_id:
            name = _("%(name)s (this browser)", name=name)
        if with_address:
            name = _("%(name)s from %(address)s", name=name, address=record.address or _("an unknown address"))
        return name

    labels = {record.id: described(record, False) for record in records}
    for with_address, numbered in ((True, False), (True, True)):
        seen = Counter((labels[record.id], when[record.id]) for record in records)
        numbers: Counter = Counter()
        for record in records:
            key = (labels[record.id], when[record.id])
            if seen[key] > 1:
                if numbered:
                    numbers[key] += 1
                    labels[record.id] = _("%(name)s, session %(number)d", name=labels[record.id],
                                          number=numbers[key])
                else:
                    labels[record.id] = described(record, with_address)
    return [SessionRow(record=record, name=names[record.id], current=record.id == current_id,
                       end_label=_("End session: %(name)s, last active %(when)s", name=labels[record.id],
                                   when=when[record.id]))
            for record in records]


def _account_page(password_form: ChangePasswordForm | None = None, status: int = 200):
    rows = audit_page(g.scope, AuditFilters(actor=current_user.email), RECENT_AUDIT_ENTRIES).rows
    targets = audit_targets(g.scope, rows)
    return render_page(
        "account/index.html", status=status, password_form=password_form or ChangePasswordForm(formdata=None),
        sessions=_session_rows(), audit_rows=rows, target_labels={row.id: target_label(row, targets) for row in rows})


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
