"""Time and language preferences: the institution's time zone and each staff member's portal language."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from zoneinfo import ZoneInfo

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


# The zones of the region the portal serves, listed first (in this order) under "East Africa".
EAST_AFRICAN_ZONES = (
    "Africa/Kigali", "Africa/Kampala", "Africa/Nairobi", "Africa/Dar_es_Salaam", "Africa/Bujumbura",
    "Africa/Lubumbashi", "Africa/Juba", "Africa/Addis_Ababa", "Africa/Mogadishu", "Africa/Djibouti",
    "Africa/Asmara", "Africa/Khartoum", "Indian/Comoro", "Indian/Antananarivo", "Indian/Mayotte",
)
EAST_AFRICA_GROUP = "East Africa"
UTC_GROUP = "UTC"
# Names of UTC itself (and of GMT, which keeps the same time) in tzdata.
UTC_NAMES = frozenset({"Etc/UTC", "Etc/UCT", "Etc/Zulu", "Etc/Universal", "Etc/GMT", "Etc/Greenwich"})


def _tzdata_text(name: str) -> str:
    return resources.files("tzdata.zoneinfo").joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def time_zone_names() -> tuple[str, ...]:
    """The zones an admin can choose (sorted): every zone of tzdata's zone.tab, plus UTC."""
    zones = {line.split("\t")[2] for line in _tzdata_text("zone.tab").splitlines()
             if line and not line.startswith("#")}
    return tuple(sorted(zones | {FALLBACK_TIME_ZONE}))


@lru_cache(maxsize=1)
def time_zone_groups() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The choices in groups: East Africa, then UTC, then each area of the world (Africa, America, …) with its
    zones sorted by name. Group keys are English words the portal translates."""
    listed = set(EAST_AFRICAN_ZONES) | {FALLBACK_TIME_ZONE}
    areas: dict[str, list[str]] = {}
    for zone in time_zone_names():
        if zone not in listed:
            areas.setdefault(zone.split("/", 1)[0], []).append(zone)
    return ((EAST_AFRICA_GROUP, EAST_AFRICAN_ZONES), (UTC_GROUP, (FALLBACK_TIME_ZONE,)),
            *((area, tuple(zones)) for area, zones in sorted(areas.items())))


@lru_cache(maxsize=1)
def _links() -> dict[str, str]:
    """tzdata's links: alias -> the zone it stands for (e.g. Africa/Asmera -> Africa/Nairobi)."""
    links = {}
    for line in _tzdata_text("tzdata.zi").splitlines():
        if line.startswith("L "):
            _marker, target, alias = line.split()[:3]
            links[alias] = target
    return links


@lru_cache(maxsize=512)
def canonical_time_zone(name: str) -> str | None:
    """The listed zone a name stands for: itself when listed, else the listed zone that tzdata links it to
    (Africa/Asmera -> Africa/Nairobi, Etc/UTC -> UTC); None when no listed zone keeps the same time."""
    listed = time_zone_names()
    if name in listed:
        return name
    links = _links()
    target = name
    for _step in range(8):  # links never chain far; a bound against a loop
        target = links.get(target, target)
        if target in listed:
            return target
    same = sorted(zone for zone in listed if links.get(zone) == target)
    if same:
        return same[0]
    return FALLBACK_TIME_ZONE if target in UTC_NAMES else None


def _institution(scope: InstitutionScope):
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return institution


def fee_currency(scope: InstitutionScope) -> str:
    """The currency the institution charges its fees in (its programs' most used, else its verification
    price's), upper-case; empty when it has none. It names the institution's country."""
    statement = (scope.select(Program, Program.currency).group_by(Program.currency)
                 .order_by(func.count().desc(), Program.currency).limit(1))
    currency = db.session.scalar(statement)
    if currency is None:
        currency = _institution(scope).verification_currency
    return (currency or "").upper()


def country_time_zone(scope: InstitutionScope) -> str:
    """The zone of the country the institution's fees are charged in (its most used currency), else UTC."""
    return TIME_ZONE_BY_CURRENCY.get(fee_currency(scope), FALLBACK_TIME_ZONE)


def time_zone_of(scope: InstitutionScope) -> str:
    """The zone the institution's portal shows times in: its admins' choice (an alias stored before shown as
    its canonical zone), else its country's."""
    return chosen_time_zone(scope) or country_time_zone(scope)


def chosen_time_zone(scope: InstitutionScope) -> str | None:
    """The zone an admin chose, or None when the country's zone applies. A stored alias reads as the listed
    zone it maps to; a name with no listed equivalent is returned as stored (it still works)."""
    stored = _institution(scope).time_zone
    if not stored:
        return None
    return canonical_time_zone(stored) or stored


def set_time_zone(scope: InstitutionScope, zone: str | None) -> str:
    """Choose the institution's zone (an IANA name); empty or None goes back to the country's zone.
    Returns the zone now in use."""
    zone = (zone or "").strip() or None
    if zone is not None and zone not in time_zone_names():
        raise InvalidInput(f"Unknown time zone {zone[:64]!r}: choose one from the list, e.g. Africa/Kigali.",
                           field="time_zone")
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
