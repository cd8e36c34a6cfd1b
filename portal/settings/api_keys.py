"""API keys (admins): create (the raw key shown once), list with prefix and last use, revoke."""
from __future__ import annotations

from dataclasses import dataclass

from flask import flash, g, redirect, url_for
from flask_babel import gettext as _

from core.accounts.api_keys import create_api_key, list_api_keys, revoke_api_key
from core.models import ApiKey
from portal import bp
from portal.forms import ActionForm, submitted
from portal.settings.forms import ApiKeyForm
from portal.rendering import is_partial_request, render_page
from portal.security import admin_required, audit


@dataclass(frozen=True)
class CreatedKey:
    key: ApiKey
    raw: str


def _page(form: ApiKeyForm, created: CreatedKey | None = None, status: int = 200):
    return render_page("keys/index.html", "keys/partial/create.html", form=form, created=created,
                       oob=is_partial_request(), keys=list_api_keys(g.scope), status=status)


@bp.get("/api-keys")
@admin_required
def api_keys():
    return _page(ApiKeyForm(formdata=None))


@bp.post("/api-keys")
@admin_required
def api_keys_create():
    form = ApiKeyForm()
    if not form.validate_on_submit():
        return _page(form, status=422)
    key, raw = create_api_key(g.scope, name=form.name.data.strip(), test=form.mode.data == "test")
    audit("api_key.create", key.id)
    # The key is shown in this response only (never through a redirect: it must not sit in a URL).
    return _page(ApiKeyForm(formdata=None), created=CreatedKey(key=key, raw=raw), status=201)


@bp.post("/api-keys/<key_id>/revoke")
@admin_required
def api_keys_revoke(key_id: str):
    submitted(ActionForm())
    key = revoke_api_key(key_id, scope=g.scope)
    audit("api_key.revoke", key.id)
    if is_partial_request():
        return render_page("keys/partial/row_only.html", key=key)
    flash(_("Key “%(name)s” was revoked.", name=key.name), "ok")
    return redirect(url_for("portal.api_keys"))
