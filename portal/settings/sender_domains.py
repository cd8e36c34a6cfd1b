"""The "Sending domain" part of the Settings page (admins): add a domain, the records to publish, Check now,
remove."""
from __future__ import annotations

from flask import flash, g, redirect, request, url_for
from flask_babel import gettext as _

from core.errors import Conflict, InvalidInput
from core.institutions.sender_domains import add_sender_domain, check_sender_domain, remove_sender_domain
from portal import bp
from portal.forms import ActionForm, submitted
from portal.security import admin_required, audit
from portal.settings.forms import SenderDomainForm
from portal.settings.preferences import settings_page

_SECTION = "sending-domain-title"


@bp.post("/settings/sending-domains")
@admin_required
def settings_sender_domain_add():
    form = SenderDomainForm()
    if not form.validate_on_submit():
        return settings_page(400, sender_domain=form)
    try:
        row = add_sender_domain(g.scope, form.domain.data)
    except (InvalidInput, Conflict) as refused:
        form.domain.errors = [*form.domain.errors, refused.message]
        return settings_page(refused.status, sender_domain=form)
    audit("sender_domain.add", row.domain)
    flash(_("Publish the two records below in the DNS of %(domain)s, then choose Check now.", domain=row.domain),
          "ok")
    return redirect(url_for("portal.settings", _anchor=_SECTION))


@bp.post("/settings/sending-domains/<domain>/check")
@admin_required
def settings_sender_domain_check(domain: str):
    submitted(ActionForm())
    check = check_sender_domain(g.scope, domain)
    audit("sender_domain.check", check.domain.domain)
    if check.verified:
        flash(_("%(domain)s is proven: emails to applicants go out from your contact address on it, signed with "
                "its own key.", domain=check.domain.domain), "ok")
    else:
        flash(_("%(domain)s is not proven yet: %(problems)s", domain=check.domain.domain,
                problems=" ".join(check.problems)), "warn")
    return redirect(url_for("portal.settings", _anchor=_SECTION))


@bp.post("/settings/sending-domains/<domain>/remove")
@admin_required
def settings_sender_domain_remove(domain: str):
    submitted(ActionForm())
    removed = remove_sender_domain(g.scope, domain)
    audit("sender_domain.remove", removed)
    flash(_("%(domain)s is removed; emails go out from Karibu's address with your name.", domain=removed), "ok")
    return redirect(url_for("portal.settings", _anchor=_SECTION))
