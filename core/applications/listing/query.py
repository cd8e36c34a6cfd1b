"""The listing's query string: filters, sort, limit, format and ids, read leniently; a bad value is a 400 naming it."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.applications.listing.cursor import Position, QueryFingerprint, open_cursor, query_fingerprint
from core.errors import InvalidInput
from core.models.admissions import DECISIONS
from core.timefmt import parse_utc


EXPORT_FORMATS = ("csv", "ndjson")


FILTER_PARAMETERS = (
    "cycle", "submitted_after", "submitted_before", "updated_since", "stage", "decision", "program",
    "enrolled", "paid", "q",
)


DATE_FILTERS = ("submitted_after", "submitted_before", "updated_since")


BOOLEAN_FILTERS = ("enrolled", "paid")


FORMATS = ("json", "csv")


MAX_QUERY_LENGTH = 200


MAX_IDS = 100


_TRUE = {"true", "1", "yes"}


_FALSE = {"false", "0", "no"}


def bad_parameter(parameter: str, message: str) -> InvalidInput:
    return InvalidInput(message, parameter=parameter)


# Sort keys of the applications listing; `-key` is the same order descending.
SORT_KEYS = ("submitted", "updated", "name", "stage")


# What each sort's cursor stores after the institution id: the kind of each value (the last one is unique).
SORT_VALUE_KINDS = {
    "submitted": ("datetime", "text"),
    "updated": ("datetime", "text"),
    "name": ("text", "text", "text"),  # folded name text, applicant id, application id
    "stage": ("text", "datetime", "text"),  # stage id, submitted_at, application id
}


@dataclass(frozen=True)
class Sort:
    """An order of the applications listing: a key of SORT_KEYS, ascending or descending."""
    key: str = "submitted"
    descending: bool = False

    @property
    def token(self) -> str:
        """The URL form: `submitted`, `-submitted`, …"""
        return ("-" if self.descending else "") + self.key

    @classmethod
    def parse(cls, raw: str | None, default: Sort) -> Sort:
        value = (raw or "").strip().lower()
        if not value:
            return default
        descending = value.startswith("-")
        key = value.removeprefix("-")
        if key not in SORT_KEYS:
            raise bad_parameter("sort", "sort must be one of: " + ", ".join(
                token for key in SORT_KEYS for token in (key, f"-{key}")))
        return cls(key, descending)


OLDEST_FIRST = Sort("submitted", False)


@dataclass(frozen=True)
class ApplicationQuery:
    kind: str
    limit: int
    filters: dict[str, Any] = field(default_factory=dict)
    fingerprint: QueryFingerprint | None = None
    after: Position | None = None
    sort: Sort = OLDEST_FIRST


@dataclass(frozen=True)
class CycleQuery:
    limit: int
    fingerprint: QueryFingerprint
    after: Position | None = None


def text_parameter(args: Mapping[str, str], name: str) -> str | None:
    """The value of a text parameter without surrounding spaces; NUL characters (which no database column can
    hold) are a 400."""
    raw = args.get(name)
    if raw is not None and "\x00" in raw:
        raise bad_parameter(name, f"{name} must not contain NUL characters")
    return raw.strip() if raw is not None else None


def parse_format(args: Mapping[str, str]) -> str:
    value = text_parameter(args, "format")
    if value is None:
        return "json"
    if value.lower() not in FORMATS:
        raise bad_parameter("format", "format must be json or csv")
    return value.lower()


def parse_limit(args: Mapping[str, str], default_limit: int, max_limit: int) -> int:
    raw = text_parameter(args, "limit")
    if raw is None or raw == "":
        return default_limit
    try:
        limit = int(raw)
    except ValueError:
        raise bad_parameter("limit", f"limit must be an integer between 1 and {max_limit}") from None
    if not 1 <= limit <= max_limit:
        raise bad_parameter("limit", f"limit must be an integer between 1 and {max_limit}")
    return limit


def _parse_bool(parameter: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise bad_parameter(parameter, f"{parameter} must be true or false")


def _parse_filters(args: Mapping[str, str], require_q: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """(parsed filters, their canonical text for the fingerprint). Empty values count as absent, except q."""
    parsed: dict[str, Any] = {}
    canonical: dict[str, str] = {}
    for name in FILTER_PARAMETERS:
        raw = text_parameter(args, name)
        if raw is None or (raw == "" and name != "q"):
            continue
        if name in DATE_FILTERS:
            try:
                value = parse_utc(raw)
            except (ValueError, OverflowError):  # OverflowError: an offset moving year 1 or 9999 out of range
                raise bad_parameter(
                    name, f"{name} must be an ISO-8601 date or datetime, e.g. 2026-01-31 or 2026-01-31T08:00:00Z"
                ) from None
            canonical[name] = value.isoformat()
        elif name in BOOLEAN_FILTERS:
            value = _parse_bool(name, raw)
            canonical[name] = "true" if value else "false"
        elif name == "decision":
            if raw.lower() not in DECISIONS:
                raise bad_parameter("decision", f"decision must be one of: {', '.join(DECISIONS)}")
            value = canonical[name] = raw.lower()
        elif name == "stage":
            value = canonical[name] = raw.lower()  # matched to a stage id of the pipeline by the query
        elif name == "q":
            value = canonical[name] = raw
            if not 1 <= len(value) <= MAX_QUERY_LENGTH:
                raise bad_parameter("q", f"q must be between 1 and {MAX_QUERY_LENGTH} characters")
        else:
            value = canonical[name] = raw
        parsed[name] = value
    if require_q and "q" not in parsed:
        raise bad_parameter("q", "q is required")
    return parsed, canonical


def parse_application_query(args: Mapping[str, str], *, kind: str = "applications", default_limit: int = 50,
                            max_limit: int = 1000, require_q: bool = False,
                            default_sort: Sort | None = None) -> ApplicationQuery:
    """Validate list parameters and open the cursor, if any; `sort` is read only when `default_sort` is given."""
    limit = parse_limit(args, default_limit, max_limit)
    filters, canonical = _parse_filters(args, require_q)
    sort = Sort.parse(text_parameter(args, "sort"), default_sort) if default_sort else OLDEST_FIRST
    if sort != OLDEST_FIRST:
        canonical["sort"] = sort.token
    fingerprint = query_fingerprint(kind, limit, canonical)
    after = open_cursor(args, fingerprint, SORT_VALUE_KINDS[sort.key])
    return ApplicationQuery(kind=kind, limit=limit, filters=filters, fingerprint=fingerprint, after=after,
                            sort=sort)


def parse_export_query(args: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """(format, filters) of a streamed export: the list's filters, `format` csv (default) or ndjson."""
    output = (args.get("format") or "csv").strip().lower()
    if output not in EXPORT_FORMATS:
        raise bad_parameter("format", f"format must be {' or '.join(EXPORT_FORMATS)}")
    return output, _parse_filters(args, require_q=False)[0]


def parse_cycle_query(args: Mapping[str, str], *, default_limit: int = 50, max_limit: int = 1000) -> CycleQuery:
    limit = parse_limit(args, default_limit, max_limit)
    fingerprint = query_fingerprint("cycles", limit, {})
    return CycleQuery(limit=limit, fingerprint=fingerprint, after=open_cursor(args, fingerprint))


def parse_ids(values: list[str]) -> list[str]:
    """Ids from repeated and/or comma-separated `ids` values, in order, each once."""
    ids: list[str] = []
    for value in values:
        if "\x00" in value:
            raise bad_parameter("ids", "ids must not contain NUL characters")
        ids.extend(part.strip() for part in value.split(",") if part.strip())
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise bad_parameter("ids", "ids is required")
    if len(ids) > MAX_IDS:
        raise bad_parameter("ids", f"too many ids: at most {MAX_IDS}")
    return ids
