"""ISO-8601 UTC parsing and formatting shared by records, filters and cursors, and the one date format of
applicant-facing text."""
from __future__ import annotations

from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

from babel.dates import format_date


def isoformat_z(value: datetime | None) -> str | None:
    """`2026-03-01T08:15:00Z` (microseconds kept when present) for a naive-UTC or aware datetime."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value.isoformat() + "Z"


def parse_utc(text: str) -> datetime:
    """Parse an ISO date or datetime; naive input is UTC. Returns naive UTC. Raises ValueError."""
    text = text.strip()
    if not text:
        raise ValueError("empty")
    if len(text) == 10:
        return datetime.combine(date.fromisoformat(text), datetime.min.time())
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(timezone.utc).replace(tzinfo=None)
    return parsed

DATE_LOCALES = {"en": "en_GB"}


def applicant_date(value: datetime | date, zone: str, language: str) -> str:
    """The date applicants read on every page and email: Babel's long date in their language, in the
    institution's time zone (`26 November 2026`, `26 novembre 2026`, `26 Novemba 2026`); a naive datetime is UTC."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        value = aware.astimezone(ZoneInfo(zone)).date()
    # British English for "en": East Africa writes the day first.
    return format_date(value, format="long", locale=DATE_LOCALES.get(language, language))
