"""Staff accounts (admins): invite with a one-time temporary password, change role, deactivate."""
from __future__ import annotations

import secrets

from flask import flash, g, redirect, url_for
from flask_login import current_user

from core.errors import InvalidInput, KaribuError
from core.users import create_user, list_users, set_active, set_role
from portal import bp
from portal.forms import ActiveForm, NewUserForm, RoleForm, submitted
from portal.rendering import is_partial_request, render_page
from portal.security import admin_required, audit


@bp.get("/users")
@admin_required
def users():
    return render_page("users/index.html", form=NewUserForm(formdata=None),
                       users=list_users(g.scope))


@bp.post("/users")
@admin_required
def users_create():
    form = NewUserForm()
    if form.validate_on_submit():
        password = secrets.token_urlsafe(12)
        try:
            user = create_user(g.scope, form.email.data, password, role=form.role.data)
        except KaribuError as error:
            form.email.errors.append(error.message)
        else:
            audit("user.create", user.id)
            invited = {"user": user, "password": password}
            return render_page("users/index.html", "users/partial/invite.html", form=NewUserForm(formdata=None),
                               invited=invited, oob=is_partial_request(), users=list_users(g.scope),
                               status=201)
    return render_page("users/index.html", "users/partial/invite.html", form=form,
                       users=list_users(g.scope), status=422)


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
    return _respond(user, f"{user.email} is now {role}.")


@bp.post("/users/<user_id>/active")
@admin_required
def users_active(user_id: str):
    value = submitted(ActiveForm()).active.data or ""
    if value not in ("true", "false"):
        raise InvalidInput("active must be true or false", field="active")
    if user_id == current_user.id and value == "false":
        raise InvalidInput("You cannot deactivate your own account", field="active")
    user = set_active(g.scope, user_id, value == "true")
    audit("user.activate" if user.active else "user.deactivate", user.id)
    return _respond(user, f"{user.email} was {'reactivated' if user.active else 'deactivated'}.")
