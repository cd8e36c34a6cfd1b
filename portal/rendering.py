"""Full page or partial, chosen by the HX-Request header; template filters and globals of the portal."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

from babel.dates import format_date as babel_format_date
from babel.dates import format_datetime as babel_format_datetime
from babel.numbers import format_currency as babel_format_currency
from babel.numbers import format_decimal as babel_format_decimal
from babel.numbers import format_percent as babel_format_percent
from babel.units import format_unit as babel_format_unit
from flask import Flask, g, make_response, render_template, request
from flask_babel import get_locale
from flask_babel import lazy_gettext as _l
from flask_login import current_user
from markupsafe import Markup

from core.institutions import institution_name
from core.accounts.preferences import time_zone_of, zone_info
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z, parse_utc
from core.audit.browsing import outcome_of, readable_target
from core.i18n import LANGUAGES
from core.vocabulary import choices, words


def is_partial_request() -> bool:
    """An htmx request that swaps part of a page (a history restore needs the whole page)."""
    return request.headers.get("HX-Request") == "true" and request.headers.get(
        "HX-History-Restore-Request") != "true"


def render_page(template: str, partial: str | None = None, *, status: int = 200, headers=None, **context):
    """Render `template`, or only `partial` for an htmx request; caches must key on HX-Request."""
    chosen = partial if partial and is_partial_request() else template
    response = make_response(render_template(chosen, **context), status, headers or {})
    response.vary.add("HX-Request")
    return response


@dataclass(frozen=True)
class NavItem:
    endpoint: str
    label: str  # a lazy gettext string: translated when the page is drawn
    prefixes: tuple[str, ...]  # view names (after "portal.") that belong to this area
    admin_only: bool = False

    def is_current(self, endpoint: str | None) -> bool:
        name = (endpoint or "").removeprefix("portal.")
        return any(name.startswith(prefix) for prefix in self.prefixes)


NAVIGATION = (
    NavItem("portal.dashboard", _l("Dashboard"), ("dashboard",)),
    NavItem("portal.applicants", _l("Applicants"), ("applicant",)),
    NavItem("portal.cycles", _l("Cycles"), ("cycles",)),
    NavItem("portal.verification", _l("Verification"), ("verification",)),
    NavItem("portal.messages", _l("Messages"), ("message",), admin_only=True),
    NavItem("portal.webhooks", _l("Webhooks"), ("webhooks",), admin_only=True),
    NavItem("portal.api_keys", _l("API keys"), ("api_keys",), admin_only=True),
    NavItem("portal.users", _l("Users"), ("users",), admin_only=True),
    NavItem("portal.audit_log", _l("Audit log"), ("audit",)),
    NavItem("portal.settings", _l("Settings"), ("settings",), admin_only=True),
)


def portal_nav() -> list[tuple[NavItem, bool]]:
    if not current_user.is_authenticated:
        return []
    return [(item, item.is_current(request.endpoint)) for item in NAVIGATION
            if current_user.is_admin or not item.admin_only]


DATETIME_PATTERN = "d MMM y, HH:mm"  # 30 Mar 2025, 14:05 (localised month names)
DATE_PATTERN = "d MMM y"             # 30 Mar 2025


def display_zone() -> ZoneInfo:
    """The zone of every time shown in this request: the signed-in user's institution's, else UTC (the public
    pages show no times). Looked up once per request."""
    if "display_zone" not in g:
        signed_in = current_user and current_user.is_authenticated
        g.display_zone = zone_info(time_zone_of(InstitutionScope(current_user.institution_id)) if signed_in else None)
    return g.display_zone


def _as_utc(value: datetime | str) -> datetime:
    """An aware UTC datetime from a stored (naive UTC) or aware datetime, or from ISO text."""
    if isinstance(value, str):
        value = parse_utc(value)
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def datetime_text(value: datetime | str | None) -> str:
    """`30 Mar 2025, 14:05` in the institution's zone and the page's language (for attributes, SVG titles)."""
    if value is None or value == "":
        return ""
    return babel_format_datetime(_as_utc(value), DATETIME_PATTERN, tzinfo=display_zone(), locale=get_locale())


def date_text(value: date | datetime | str | None) -> str:
    """`30 Mar 2025`: a calendar date as it is, a moment as its day in the institution's zone."""
    if value is None or value == "":
        return ""
    if isinstance(value, (datetime, str)):
        value = _as_utc(value).astimezone(display_zone()).date()
    return babel_format_date(value, DATE_PATTERN, locale=get_locale())


def format_month(value: str) -> str:
    """`2025-03` (a billing period) as `March 2025` in the page's language."""
    try:
        year, month = (int(part) for part in value.split("-", 1))
        return babel_format_date(date(year, month, 1), "LLLL y", locale=get_locale())
    except (AttributeError, ValueError):
        return value


def _time_element(machine: str, text: str) -> Markup:
    return Markup('<time datetime="{}">{}</time>').format(machine, text)


def format_datetime(value: datetime | str | None) -> Markup:
    """A moment as `<time datetime="2025-03-30T12:05:00Z">30 Mar 2025, 14:05</time>` (UTC in the attribute,
    the institution's zone in the text)."""
    if value is None or value == "":
        return Markup("")
    moment = _as_utc(value)
    return _time_element(isoformat_z(moment.replace(microsecond=0)), datetime_text(moment))


def format_date(value: date | datetime | str | None) -> Markup:
    """A day as `<time datetime="…">30 Mar 2025</time>`: a calendar date keeps its ISO date in the attribute,
    a moment its UTC value."""
    if value is None or value == "":
        return Markup("")
    if isinstance(value, date) and not isinstance(value, datetime):
        return _time_element(value.isoformat(), date_text(value))
    moment = _as_utc(value)
    return _time_element(isoformat_z(moment.replace(microsecond=0)), date_text(moment))


# English keeps the code after the amount ("60,000 RWF", as the institutions' statements write it); French and
# Swahili take their CLDR pattern ("60 000 RWF", "75,00 $US"; "RWF 60,000", "US$ 75.00").
CURRENCY_PATTERNS = {"en": "#,##0.00 ¤¤"}


def format_money(amount: Decimal | float | None, currency: str | None = "") -> str:
    """An amount in the page's language with as many decimals as its currency has (none for RWF and UGX)."""
    if amount is None:
        return "—"
    if not currency:
        return format_number(amount)
    language = page_language()
    return babel_format_currency(Decimal(str(amount)), currency, CURRENCY_PATTERNS.get(language), locale=language)


def format_percent(share: float) -> str:
    """A share as a whole percentage in the page's language ("42%", "42 %")."""
    return babel_format_percent(share, locale=page_language())


def format_number(value: int | float | Decimal | None) -> str:
    """A count or figure in the page's language ("12,345", "12 345")."""
    if value is None or value == "":
        return ""
    return babel_format_decimal(value, locale=page_language())


def format_size(size_in_bytes: int | None) -> str:
    """A file's size in kilobytes, one decimal at most, in the page's language ("0.8 kB", "0,8 ko")."""
    if size_in_bytes is None:
        return ""
    return babel_format_unit(Decimal(size_in_bytes) / 1024, "digital-kilobyte", length="short", format="#,##0.#",
                             locale=page_language())


def decision_labels() -> dict[str, str]:
    """Each admission decision in words of the page's language (the stored values are English codes)."""
    return dict(choices("decision"))


def page_language() -> str:
    """The language the page is drawn in (the `lang` of `<html>`)."""
    return str(get_locale() or "en")


def register_template_helpers(app: Flask) -> None:
    app.add_template_filter(format_datetime, "datetime")
    app.add_template_filter(format_date, "date")
    app.add_template_filter(datetime_text, "datetime_text")
    app.add_template_filter(date_text, "date_text")
    app.add_template_filter(format_month, "month")
    app.add_template_filter(format_money, "money")
    app.add_template_filter(format_percent, "percent")
    app.add_template_filter(format_number, "number")
    app.add_template_filter(format_size, "size")
    app.add_template_global(portal_nav)
    app.add_template_global(display_zone)
    app.add_template_global(page_language)
    app.add_template_global(decision_labels)
    app.add_template_global(words)
    app.add_template_global(LANGUAGES, "language_names")  # each language in its own name: "Français"
    app.add_template_filter(readable_target, "readable_target")
    app.add_template_global(outcome_of)

    @app.context_processor
    def _institution():
        if current_user.is_authenticated:
            return {"institution_name": institution_name(InstitutionScope(current_user.institution_id))}
        return {}
