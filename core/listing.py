"""Filtered, keyset-paginated listing of applications with signed cursors bound to the query.

A cursor carries the position of the last row (`submitted_at`, `id`) and a fingerprint of the query that
produced it (kind, limit and every filter; `format` excluded). It is signed with SECRET_KEY, so a tampered
cursor is "invalid cursor" and one reused with another query is "cursor does not match this query".
"""
from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping

from flask import current_app
from itsdangerous import BadData, URLSafeSerializer
from sqlalchemy import or_, select, tuple_

from core.errors import InvalidInput
from core.extensions import db
from core.models import Applicant, Application, Cycle, Program
from core.models.admissions import DECISIONS
from core.records import application_select
from core.scoping import InstitutionScope
from core.text import fold
from core.timefmt import parse_utc

FILTER_PARAMETERS = (
    "cycle", "submitted_after", "submitted_before", "updated_since", "stage", "decision", "program",
    "enrolled", "paid", "q",
)
MAX_QUERY_LENGTH = 200
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def bad_parameter(parameter: str, message: str) -> InvalidInput:
    return InvalidInput(message, parameter=parameter)


@dataclass(frozen=True)
class ApplicationQuery:
    kind: str
    limit: int
    filters: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    after: tuple[datetime, str] | None = None


@dataclass(frozen=True)
class Page:
    rows: list
    has_next: bool
    cursor: str | None


def _serializer() -> URLSafeSerializer:
    return URLSafeSerializer(current_app.config["SECRET_KEY"], salt="karibu.cursor.v1")


def query_fingerprint(kind: str, limit: int, raw_filters: Mapping[str, str]) -> str:
    canonical = json.dumps({"kind": kind, "limit": limit, "filters": dict(sorted(raw_filters.items()))},
                           separators=(",", ":"))
    secret = current_app.config["SECRET_KEY"].encode()
    return hmac.new(secret, canonical.encode(), hashlib.sha256).hexdigest()[:24]


def encode_cursor(fingerprint: str, position: list) -> str:
    return _serializer().dumps([fingerprint, *position])


def decode_cursor(token: str, fingerprint: str) -> list:
    """The position stored in `token`; raises InvalidInput (parameter `cursor`) on any mismatch."""
    try:
        payload = _serializer().loads(token)
    except BadData:
        raise bad_parameter("cursor", "invalid cursor") from None
    if not isinstance(payload, list) or len(payload) < 2 or not isinstance(payload[0], str):
        raise bad_parameter("cursor", "invalid cursor")
    if not hmac.compare_digest(payload[0], fingerprint):
        raise bad_parameter("cursor", "cursor does not match this query")
    return payload[1:]


def parse_limit(args: Mapping[str, str], default_limit: int, max_limit: int) -> int:
    raw = args.get("limit")
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
    parsed: dict[str, Any] = {}
    raw_filters: dict[str, str] = {}
    for name in FILTER_PARAMETERS:
        raw = args.get(name)
        if raw is None or (raw == "" and name != "q"):
            continue
        raw_filters[name] = raw
        if name in ("submitted_after", "submitted_before", "updated_since"):
            try:
                parsed[name] = parse_utc(raw)
            except ValueError:
                raise bad_parameter(
                    name, f"{name} must be an ISO-8601 date or datetime, e.g. 2026-01-31 or 2026-01-31T08:00:00Z"
                ) from None
        elif name in ("enrolled", "paid"):
            parsed[name] = _parse_bool(name, raw)
        elif name == "decision":
            if raw not in DECISIONS:
                raise bad_parameter("decision", f"decision must be one of: {', '.join(DECISIONS)}")
            parsed[name] = raw
        elif name == "q":
            if not 1 <= len(raw.strip()) <= MAX_QUERY_LENGTH:
                raise bad_parameter("q", f"q must be between 1 and {MAX_QUERY_LENGTH} characters")
            parsed[name] = raw.strip()
        else:
            parsed[name] = raw
    if require_q and "q" not in parsed:
        raise bad_parameter("q", "q is required")
    return parsed, raw_filters


def parse_application_query(args: Mapping[str, str], *, kind: str = "applications", default_limit: int = 50,
                            max_limit: int = 1000, require_q: bool = False) -> ApplicationQuery:
    """Validate list parameters (unknown ones are ignored) and open the cursor, if any."""
    limit = parse_limit(args, default_limit, max_limit)
    filters, raw_filters = _parse_filters(args, require_q)
    fingerprint = query_fingerprint(kind, limit, raw_filters)
    after = None
    token = args.get("cursor")
    if token:
        position = decode_cursor(token, fingerprint)
        try:
            after = (datetime.fromisoformat(position[0]), str(position[1]))
        except (TypeError, ValueError, IndexError):
            raise bad_parameter("cursor", "invalid cursor") from None
    return ApplicationQuery(kind=kind, limit=limit, filters=filters, fingerprint=fingerprint, after=after)


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def filtered_applications(scope: InstitutionScope, filters: Mapping[str, Any], statement=None):
    """Apply the list filters to `statement` (default: the record select of this institution)."""
    statement = application_select(scope) if statement is None else statement
    if "cycle" in filters:
        value = filters["cycle"]
        cycles = scope.select(Cycle, Cycle.id).where(or_(Cycle.id == value, Cycle.name == value))
        statement = statement.where(Application.cycle_id.in_(cycles.scalar_subquery()))
    if "program" in filters:
        value = filters["program"]
        programs = scope.select(Program, Program.id).where(or_(Program.id == value, Program.name == value))
        statement = statement.where(Application.program_id.in_(programs.scalar_subquery()))
    if "submitted_after" in filters:
        statement = statement.where(Application.submitted_at >= filters["submitted_after"])
    if "submitted_before" in filters:
        statement = statement.where(Application.submitted_at < filters["submitted_before"])
    if "updated_since" in filters:
        statement = statement.where(Application.updated_at >= filters["updated_since"])
    for name in ("stage", "decision", "enrolled", "paid"):
        if name in filters:
            statement = statement.where(getattr(Application, name) == filters[name])
    if "q" in filters:
        q = filters["q"]
        matching_applicants = scope.select(Applicant, Applicant.id).where(
            Applicant.search_text.like(_like_pattern(fold(q)), escape="\\"))
        statement = statement.where(or_(Application.id == q,
                                        Application.applicant_id.in_(matching_applicants.scalar_subquery())))
    return statement


def fetch_application_page(scope: InstitutionScope, query: ApplicationQuery) -> Page:
    """One page in (`submitted_at`, `id`) order, by keyset: page N costs what page 1 costs."""
    statement = filtered_applications(scope, query.filters)
    if query.after is not None:
        statement = statement.where(
            tuple_(Application.submitted_at, Application.id) > tuple_(*query.after))
    statement = statement.order_by(Application.submitted_at, Application.id).limit(query.limit + 1)
    rows = list(db.session.execute(statement))
    has_next = len(rows) > query.limit
    rows = rows[: query.limit]
    cursor = None
    if has_next:
        last = rows[-1]
        cursor = encode_cursor(query.fingerprint, [last.submitted_at.isoformat(), last.id])
    return Page(rows=rows, has_next=has_next, cursor=cursor)
