"""Time and language preferences: the institution's time zone (every time shown in the portal) and each staff
member's portal language.

Institutions carry no country of their own; the currency of their programs' fees says where they are
(RWF: Rwanda, UGX: Uganda, KES: Kenya), so an institution that never chose a zone sees the zone of that
country, and UTC when the currency names none of them. An admin can choose any IANA zone.
"""
from __future__ import annotations

from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

from sqlalchemy import func

from core.errors import InvalidInput, NotFound
from core.db import db
from core.i18n import DEFAULT_LANGUAGE, STAFF_LANGUAGES
from core.models import Program, User
from core.scoping import InstitutionScope

FALLBACK_TIME_ZONE = "UTC"
# The country a fee currency belongs to, and that country's zone.
TIME_ZONE_BY_CURRENCY = {
    "RWF": "Africa/Kigali",
    "UGX": "Africa/Kampala",
    "KES": "Africa/Nairobi",
}


@lru_cache(maxsize=1)
def time_zone_names() -> tuple[str, ...]:
    """Every IANA zone name this machine knows, sorted (the choices of the settings form)."""
    return tuple(sorted(available_timezones() | {FALLBACK_TIME_ZONE}))


def _institution(scope: InstitutionScope):
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return institution


def country_time_zone(scope: InstitutionScope) -> str:
    """The zone of the country the institution's fees are charged in (its most used currency), else UTC."""
    statement = (scope.select(Program, Program.currency).group_by(Program.currency)
                 .order_by(func.count().desc(), Program.currency).limit(1))
    currency = db.session.scalar(statement)
    if currency is None:
        currency = _institution(scope).verification_currency
    return TIME_ZONE_BY_CURRENCY.get((currency or "").upper(), FALLBACK_TIME_ZONE)


def time_zone_of(scope: InstitutionScope) -> str:
    """The zone the institution's portal shows times in: its admins' choice, else its country's."""
    return _institution(scope).time_zone or country_time_zone(scope)


def chosen_time_zone(scope: InstitutionScope) -> str | None:
    """The zone an admin chose, or None when the country's zone applies."""
    return _institution(scope).time_zone


def set_time_zone(scope: InstitutionScope, zone: str | None) -> str:
    """Choose the institution's zone (an IANA name); empty or None goes back to the country's zone.
    Returns the zone now in use."""
    zone = (zone or "").strip() or None
    if zone is not None and zone not in time_zone_names():
        raise InvalidInput("Choose a time zone from the list, e.g. Africa/Kigali.", field="time_zone")
    _institution(scope).time_zone = zone
    db.session.commit()
    return time_zone_of(scope)


def zone_info(name: str | None) -> ZoneInfo:
    """The ZoneInfo of a stored name; an unknown name (tz data changed since) falls back to UTC."""
    try:
        return ZoneInfo(name or FALLBACK_TIME_ZONE)
    except (ValueError, KeyError, OSError):
        return ZoneInfo(FALLBACK_TIME_ZONE)


def set_user_language(scope: InstitutionScope, user_id: str, language: str) -> str:
    """Set a staff member's portal language (one of STAFF_LANGUAGES)."""
    if language not in STAFF_LANGUAGES:
        raise InvalidInput(f"Choose one of: {', '.join(STAFF_LANGUAGES.values())}.", field="language")
    user = scope.require(User, user_id, what="User")
    user.language = language
    db.session.commit()
    return language


def user_language(user) -> str:
    """The portal language of a signed-in user (English when none was chosen)."""
    language = getattr(user, "language", None)
    return language if language in STAFF_LANGUAGES else DEFAULT_LANGUAGE
