"""The Settings page (admins): the institution's time zone and what applicants see of it; and each staff
member's portal language (`/account/language`, also included on the account page)."""
from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache

from babel.dates import get_timezone_location
from flask import flash, g, redirect, request, url_for
from flask_babel import get_locale, lazy_gettext, refresh
from flask_babel import gettext as _
from flask_login import current_user

from core.config import settings as config_settings
from core.errors import InvalidInput
from core.institutions import institution_name
from core.institutions.identity import (
    CONTRAST_MESSAGE, DEFAULT_COLOUR, IDENTITY_FIELDS, IdentityRefused, identity_of, remove_logo, set_logo,
    update_identity,
)
from core.institutions.sender_domains import Finding, records_to_publish, sender_domains
from core.i18n import STAFF_LANGUAGES
from core.accounts.preferences import (
    EAST_AFRICA_GROUP, FALLBACK_TIME_ZONE, UTC_GROUP, chosen_time_zone, country_time_zone, set_time_zone,
    set_user_language, time_zone_groups, user_language, zone_info,
)
from portal import bp
from portal.forms import ActionForm, field_label, submitted
from portal.limiter import limiter
from portal.rendering import render_page
from portal.security import admin_required, audit, safe_next, staff_required
from portal.settings.apply_link import apply_link
from portal.settings.forms import IdentityForm, LanguageForm, LogoForm, SenderDomainForm, TimeZoneForm


# The groups of the time-zone picker in words (UTC is its own name in every language).
TIME_ZONE_GROUP_LABELS = {
    EAST_AFRICA_GROUP: lazy_gettext("East Africa"), UTC_GROUP: "UTC", "Africa": lazy_gettext("Africa"),
    "America": lazy_gettext("Americas"), "Antarctica": lazy_gettext("Antarctica"), "Arctic": lazy_gettext("Arctic"),
    "Asia": lazy_gettext("Asia"), "Atlantic": lazy_gettext("Atlantic Ocean"), "Australia": lazy_gettext("Australia"),
    "Europe": lazy_gettext("Europe"), "Indian": lazy_gettext("Indian Ocean"), "Pacific": lazy_gettext("Pacific Ocean"),
}


@lru_cache(maxsize=2048)
def time_zone_city(zone: str, language: str) -> str:
    """The zone's city in the language ("Kigali", "Le Caire"), from the CLDR names Babel carries; the last part
    of the zone's name when CLDR has none."""
    city = get_timezone_location(zone, locale=language, return_city=True)
    return city if "/" not in city else zone.rsplit("/", 1)[-1].replace("_", " ")


def utc_offset(zone: str, now: datetime) -> str:
    """`UTC+02:00`, `UTC−03:30`, or `UTC` for a zone at UTC, the offset in force at `now`."""
    offset = now.astimezone(zone_info(zone)).utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset else 0
    if minutes == 0:
        return "UTC"
    sign = "+" if minutes > 0 else "−"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def time_zone_choices(selected: str | None) -> dict:
    """The picker's options: the country's zone (empty value) first, then `time_zone_groups`' zones labelled
    "Kigali (UTC+02:00)", plus a stored zone not listed."""
    language, now = str(get_locale() or "en"), datetime.now(timezone.utc)
    ungrouped = [("", _("The zone of your country (%(zone)s)", zone=country_time_zone(g.scope)))]
    listed = set()
    choices: dict = {None: ungrouped}
    for group, zones in time_zone_groups():
        options = []
        for zone in zones:
            listed.add(zone)
            city = "UTC" if zone == FALLBACK_TIME_ZONE else time_zone_city(zone, language)
            options.append((zone, _("%(city)s (%(offset)s)", city=city, offset=utc_offset(zone, now))))
        choices[str(TIME_ZONE_GROUP_LABELS[group])] = options
    if selected and selected not in listed:
        ungrouped.append((selected, selected))
    return choices


def time_zone_form(formdata=None) -> TimeZoneForm:
    chosen = chosen_time_zone(g.scope)
    form = TimeZoneForm(formdata=formdata, time_zone=chosen or "")
    form.time_zone.choices = time_zone_choices(chosen)
    return form


def identity_form(formdata=None) -> IdentityForm:
    """The identity form: the stored values, or what the admin typed (`formdata`)."""
    return IdentityForm(formdata=formdata, obj=g.scope.institution())


def settings_page(status: int = 200, *, identity: IdentityForm | None = None, logo: LogoForm | None = None,
                  zone: TimeZoneForm | None = None, sender_domain: SenderDomainForm | None = None):
    """The Settings page; a refused time-zone, identity, logo or sending-domain form is shown again with its
    errors (`status` 400, 409)."""
    return render_page("settings/index.html", status=status, time_zone_form=zone or time_zone_form(),
                       identity_form=identity or identity_form(), logo_form=logo or LogoForm(formdata=None),
                       identity=identity_of(g.scope), default_name=institution_name(g.scope),
                       default_colour=DEFAULT_COLOUR, sender_domains=sender_domains(g.scope),
                       sender_domain_form=sender_domain or SenderDomainForm(formdata=None),
                       records_to_publish=records_to_publish, finding=lambda stored: Finding(**stored),
                       sender_domains_allowed=config_settings().MAIL_ALLOWED_SENDER_DOMAINS.strip(),
                       apply_link=apply_link(), identity_refused=identity is not None and status == 400,
                       contrast_message=str(CONTRAST_MESSAGE))


@bp.get("/settings")
@admin_required
def settings():
    return settings_page()


@bp.post("/settings/time-zone")
@admin_required
def settings_time_zone():
    form = submitted(time_zone_form(formdata=request.form))
    try:
        zone = set_time_zone(g.scope, form.time_zone.data)
    except InvalidInput:
        form.time_zone.errors = [*form.time_zone.errors, _("Choose a time zone from the list: “%(zone)s” is "
                                                           "not one Karibu knows.", zone=(form.time_zone.data or "")[:64])]
        return settings_page(400, zone=form)
    audit("institution.time_zone", zone)
    flash(_("Times are now shown in %(zone)s.", zone=zone), "ok")
    return redirect(url_for("portal.settings"))


@bp.post("/settings/identity")
@admin_required
def settings_identity():
    form = submitted(identity_form(formdata=request.form))
    try:
        changed = update_identity(g.scope, {name: form[name].data for name in IDENTITY_FIELDS})
    except IdentityRefused as refused:
        for item in refused.errors:
            form[item["name"]].errors = [*form[item["name"]].errors, item["message"]]
        return settings_page(400, identity=form)
    if changed:
        audit("institution.identity", ",".join(changed))
        flash(_("Saved: %(fields)s.", fields=", ".join(field_label(form, name).lower() for name in changed)), "ok")
    else:
        flash(_("Nothing changed."), "info")
    return redirect(url_for("portal.settings", _anchor="identity-title"))


def _institution_of_user() -> str:
    return f"logo:{getattr(current_user, 'institution_id', None) or 'anonymous'}"


@bp.post("/settings/logo")
@limiter.limit(lambda: config_settings().PORTAL_LOGO_UPLOAD_RATE_LIMIT, key_func=_institution_of_user)
@admin_required
def settings_logo():
    form = submitted(LogoForm())
    upload = form.logo.data
    try:
        digest = set_logo(g.scope, upload.read() if upload else b"")
    except InvalidInput as refused:
        form.logo.errors = [*form.logo.errors, refused.message]
        return settings_page(400, logo=form)
    audit("institution.logo", digest)
    flash(_("The new logo is saved; applicants see it from now on."), "ok")
    return redirect(url_for("portal.settings", _anchor="logo-title"))


@bp.post("/settings/logo/remove")
@admin_required
def settings_logo_remove():
    submitted(ActionForm())
    digest = identity_of(g.scope).logo_digest
    if remove_logo(g.scope):
        audit("institution.logo_remove", digest)
        flash(_("The logo is removed; applicants see the name alone."), "ok")
    else:
        flash(_("There was no logo to remove."), "info")
    return redirect(url_for("portal.settings", _anchor="logo-title"))


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
