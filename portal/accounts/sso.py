"""Sign-in with the university's account (OpenID Connect): starting it from an email, the provider's answer, and
the admins' settings page; every check is core.accounts.sso's."""
from __future__ import annotations

from flask import flash, g, redirect, request, session, url_for
from flask_babel import gettext as _
from flask_login import current_user

from core.accounts import sso
from core.audit.recording import AuditEntry
from core.config import settings
from core.db import db
from core.errors import InvalidInput, KaribuError
from portal import bp
from portal.accounts.forms import SsoSettingsForm
from portal.accounts.sign_in import complete_sign_in
from portal.forms import ActionForm, submitted
from portal.limiter import limiter
from portal.rendering import render_page
from portal.security import SESSION_RECORD_KEY, admin_required, audit, safe_next

# The browser's pending sign-in at its provider (state, nonce, PKCE verifier…), in its signed session cookie.
PENDING_SSO_KEY = "sso_sign_in"
# Set in the session of a browser signed in through its provider (the provider answered for the second factor).
SIGNED_IN_WITH_KEY = "signed_in_with"
SIGNED_IN_WITH_SSO = "sso"


def signed_in_with_provider() -> bool:
    """This browser's session was opened by the university's provider."""
    return session.get(SIGNED_IN_WITH_KEY) == SIGNED_IN_WITH_SSO


def _address() -> str:
    return "sso-addr:" + (request.remote_addr or "unknown")


def _refused_response(response) -> bool:
    """Only refusals count against the address: a university behind one address signs many people in."""
    return response.status_code >= 400


def _refused(refusal: sso.SsoRefused):
    """The refusal's page (its own status) and its `auth.sso.refused` audit row with the reason."""
    db.session.rollback()
    g.audit = AuditEntry(source="portal", actor=refusal.email or "anonymous", institution_id=refusal.institution,
                         action="auth.sso.refused", target=refusal.reason, status=refusal.status,
                         detail=refusal.message)
    headers = {"Retry-After": "60"} if refusal.status == 503 else None
    return render_page("auth/sso_refused.html", message=refusal.message, status=refusal.status, headers=headers)


@bp.route("/login/sso", methods=["GET", "POST"])
@limiter.limit(lambda: settings().PORTAL_LOGIN_ADDRESS_RATE_LIMIT, key_func=_address, deduct_when=_refused_response)
def sso_start():
    """Send the browser to the provider of the email's domain: a redirect for `GET ?email=`; for the sign-in
    page's form (POST) a page that forwards it, since the portal's CSP lets forms lead nowhere but here."""
    values = request.form if request.method == "POST" else request.args
    next_url = safe_next(values.get("next"))
    if current_user.is_authenticated:
        return redirect(next_url or url_for("portal.dashboard"))
    try:
        started = sso.start_sign_in(values.get("email", "")[:254], next_url)
    except sso.SsoRefused as refusal:
        return _refused(refusal)
    session.pop(PENDING_SSO_KEY, None)
    session[PENDING_SSO_KEY] = started.pending
    if request.method == "POST":
        return render_page("auth/sso_forward.html", authorization_url=started.authorization_url)
    return redirect(started.authorization_url)


@bp.get("/login/sso/callback")
@limiter.limit(lambda: settings().PORTAL_LOGIN_ADDRESS_RATE_LIMIT, key_func=_address, deduct_when=_refused_response)
def sso_callback():
    """The provider's answer: sign in the account it vouches for, or a page saying why not."""
    pending = session.pop(PENDING_SSO_KEY, None)
    arguments = request.args
    try:
        result = sso.finish_sign_in(pending, state=arguments.get("state"), code=arguments.get("code"),
                                    error=arguments.get("error"),
                                    error_description=arguments.get("error_description"))
    except sso.SsoRefused as refusal:
        return _refused(refusal)
    next_url = safe_next(pending.get("next"))
    complete_sign_in(result.user)
    session[SIGNED_IN_WITH_KEY] = SIGNED_IN_WITH_SSO
    g.audit = AuditEntry(
        source="portal", actor=result.user.email, institution_id=result.user.institution_id,
        action="auth.sso.user_created" if result.created else "auth.sso.signed_in", target=result.user.id,
        detail=("staff account created on first sign-in; " if result.created else "")
        + f"amr={','.join(result.amr) or '-'} acr={result.acr or '-'}")
    return redirect(next_url or url_for("portal.dashboard"))


# --- the admins' page -------------------------------------------------------------------------------------------

def _settings_page(form: SsoSettingsForm, status: int = 200):
    current = sso.configuration(g.scope)
    return render_page("settings/sso.html", form=form, current=current, remove_form=ActionForm(),
                       redirect_uri=sso.redirect_uri(), break_glass=sso.break_glass_admins(g.scope),
                       status=status)


@bp.get("/settings/sso")
@admin_required
def settings_sso():
    current = sso.configuration(g.scope)
    form = SsoSettingsForm(formdata=None)
    if current is not None:
        form.issuer.data, form.client_id.data = current.issuer, current.client_id
        form.domains.data, form.require.data = ", ".join(current.domains), current.require
        form.create_users.data = current.create_users
    return _settings_page(form)


@bp.post("/settings/sso")
@admin_required
def settings_sso_save():
    form = SsoSettingsForm()
    if not form.validate_on_submit():
        return _settings_page(form, status=422)
    try:
        saved, ended = sso.configure(
            g.scope, issuer=form.issuer.data, client_id=form.client_id.data,
            client_secret=form.client_secret.data or None, domains=form.domains.data, require=form.require.data,
            create_users=form.create_users.data, keep_session_id=session.get(SESSION_RECORD_KEY))
    except KaribuError as error:
        db.session.rollback()
        field = form._fields.get(error.name or "")
        (field.errors if field is not None else form.form_errors).append(error.message)
        return _settings_page(form, status=422 if isinstance(error, InvalidInput) else error.status)
    audit("sso.set", ",".join(saved.domains))
    flash(_("University sign-in is saved.") + (" " + _("%(count)d password session(s) on these domains were "
                                                          "signed out.", count=ended) if ended else ""), "ok")
    return redirect(url_for("portal.settings_sso"))


@bp.post("/settings/sso/remove")
@admin_required
def settings_sso_remove():
    submitted(ActionForm())
    removed = sso.remove(g.scope)
    audit("sso.removed", "removed" if removed else "none")
    flash(_("University sign-in is removed: staff sign in with their passwords.") if removed
          else _("There was no university sign-in to remove."), "ok")
    return redirect(url_for("portal.settings_sso"))


@bp.app_template_global("university_sign_in")
def _university_sign_in():
    """The institution's provider for the Users page's summary (None when it has none)."""
    return sso.configuration(g.scope)
