"""Time and language: the institution's time zone (admins, on the Settings page) and each staff member's
portal language (a small form of its own, `templates/account/partial/language.html`, that the account page
includes; `/account/language` shows it on a page of its own)."""
from __future__ import annotations

from flask import flash, g, redirect, request, url_for
from flask_babel import gettext as _
from flask_babel import refresh
from flask_login import current_user

from core.errors import InvalidInput
from core.i18n import STAFF_LANGUAGES
from core.accounts.preferences import (
    chosen_time_zone, country_time_zone, set_time_zone, set_user_language, time_zone_names, user_language,
)
from portal import bp
from portal.forms import LanguageForm, TimeZoneForm, submitted
from portal.rendering import render_page
from portal.security import admin_required, audit, safe_next, staff_required


def time_zone_form(formdata=None) -> TimeZoneForm:
    form = TimeZoneForm(formdata=formdata, time_zone=chosen_time_zone(g.scope) or "")
    form.time_zone.choices = [("", _("The zone of your country (%(zone)s)", zone=country_time_zone(g.scope)))] + [
        (name, name) for name in time_zone_names()]
    return form


@bp.get("/settings")
@admin_required
def settings():
    return render_page("settings/index.html", time_zone_form=time_zone_form())


@bp.post("/settings/time-zone")
@admin_required
def settings_time_zone():
    form = submitted(time_zone_form(formdata=request.form))
    zone = set_time_zone(g.scope, form.time_zone.data)
    audit("institution.time_zone", zone)
    flash(_("Times are now shown in %(zone)s.", zone=zone), "ok")
    return redirect(url_for("portal.settings"))


def language_form() -> LanguageForm:
    """The signed-in user's language form (a template global, so any page can include the partial)."""
    return LanguageForm(formdata=None, language=user_language(current_user))


@bp.get("/account/language")
@staff_required
def account_language():
    return render_page("account/language.html")


@bp.post("/account/language")
@staff_required
def account_language_save():
    form = LanguageForm()
    if not form.validate_on_submit():
        raise InvalidInput(_("Choose one of: %(languages)s.", languages=", ".join(STAFF_LANGUAGES.values())),
                           field="language")
    language = set_user_language(g.scope, current_user.id, form.language.data)
    audit("user.language", language)
    # Drawn after the change, so the confirmation is already in the chosen language.
    refresh()
    flash(_("The portal is now shown in %(language)s.", language=STAFF_LANGUAGES[language]), "ok")
    return redirect(safe_next(request.form.get("next")) or url_for("portal.account_language"))


@bp.app_context_processor
def _language_form():
    return {"language_form": language_form} if current_user and current_user.is_authenticated else {}
