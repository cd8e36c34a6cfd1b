"""Staff accounts (admins): invite by email, resend or revoke an invitation, change role, deactivate."""
from __future__ import annotations

from flask import flash, g, redirect, url_for
from flask_babel import get_locale
from flask_babel import gettext as _
from flask_login import current_user

from core.accounts.links import invite, pending_invitations, resend_invitation, revoke_invitation
from core.errors import InvalidInput, KaribuError
from core.models import utcnow
from core.accounts.users import list_users, set_active, set_role
from portal import bp
from portal.accounts.forms import ActiveForm, NewUserForm, RoleForm
from portal.forms import ActionForm, submitted
from portal.rendering import is_partial_request, render_page
from portal.security import admin_required, audit


def _language() -> str:
    return str(get_locale() or "en")


def _page_context(**extra) -> dict:
    return dict(users=list_users(g.scope), invitations=pending_invitations(g.scope), now=utcnow(), **extra)


@bp.get("/users")
@admin_required
def users():
    return render_page("users/index.html", form=NewUserForm(formdata=None), **_page_context())


@bp.post("/users")
@admin_required
def users_create():
    form = NewUserForm()
    if form.validate_on_submit():
        try:
            invitation = invite(g.scope, form.email.data, form.role.data, current_user, language=_language())
        except KaribuError as error:
            form.email.errors.append(error.message)
        else:
            audit("invitation.send", f"{invitation.id} ({invitation.role})")
            return render_page("users/index.html", "users/partial/invite.html", form=NewUserForm(formdata=None),
                               invited=invitation, oob=is_partial_request(), status=201, **_page_context())
    return render_page("users/index.html", "users/partial/invite.html", form=form, status=422, **_page_context())


@bp.post("/users/invitations/<invitation_id>/resend")
@admin_required
def invitation_resend(invitation_id: str):
    submitted(ActionForm())
    invitation = resend_invitation(g.scope, invitation_id, current_user, language=_language())
    audit("invitation.resend", invitation.id)
    flash(_("A new invitation link was sent to %(email)s; the earlier link no longer works.",
            email=invitation.email), "ok")
    return redirect(url_for("portal.users"))


@bp.post("/users/invitations/<invitation_id>/revoke")
@admin_required
def invitation_revoke(invitation_id: str):
    submitted(ActionForm())
    invitation = revoke_invitation(g.scope, invitation_id)
    audit("invitation.revoke", invitation.id)
    flash(_("The invitation of %(email)s is withdrawn; its link no longer works.", email=invitation.email), "ok")
    return redirect(url_for("portal.users"))


def _respond(user, message: str):
    if is_partial_request():
        return render_page("users/partial/row_only.html", user=user)
    flash(message, "ok")
    return redirect(url_for("portal.users"))


@bp.post("/users/<user_id>/role")
@admin_required
def users_role(user_id: str):
    role = submitted(RoleForm()).role.data or ""
    user = set_role(g.scope, user_id, role)
    audit("user.role", f"{user.id} -> {role}")
    return _respond(user, _("%(email)s is now %(role)s; their sessions were signed out.", email=user.email,
                            role=role))


@bp.post("/users/<user_id>/active")
@admin_required
def users_active(user_id: str):
    value = submitted(ActiveForm()).active.data or ""
    if value not in ("true", "false"):
        raise InvalidInput("active must be true or false", field="active")
    if user_id == current_user.id and value == "false":
        raise InvalidInput(_("You cannot deactivate your own account."), field="active")
    user = set_active(g.scope, user_id, value == "true")
    audit("user.activate" if user.active else "user.deactivate", user.id)
    return _respond(user, _("%(email)s was reactivated.", email=user.email) if user.active else
                    _("%(email)s was deactivated and signed out.", email=user.email))
