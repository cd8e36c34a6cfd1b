"""Browsing an institution's own audit log: newest first, filtered, paged by id (keyset)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from core.errors import InvalidInput
from core.db import db
from core.models import AuditLog
from core.paging import KeysetPage
from core.scoping import InstitutionScope
from core.timefmt import parse_utc

SOURCES = ("api", "portal")
OUTCOMES = ("success", "client_error", "server_error")
PAGE_SIZE = 50


@dataclass(frozen=True)
class AuditFilters:
    source: str = ""
    actor: str = ""
    outcome: str = ""
    since: datetime | None = None
    until: datetime | None = None
    before: int | None = None  # only entries older than this id (the page's `next_before`)


def parse_audit_filters(args) -> AuditFilters:
    """Validate the filter parameters; InvalidInput names the offending parameter."""
    source = (args.get("source") or "").strip()
    if source and source not in SOURCES:
        raise InvalidInput(f"source must be one of: {', '.join(SOURCES)}", parameter="source")
    outcome = (args.get("outcome") or "").strip()
    if outcome and outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be one of: {', '.join(OUTCOMES)}", parameter="outcome")
    dates = {}
    for name in ("since", "until"):
        raw = (args.get(name) or "").strip()
        if raw:
            try:
                dates[name] = parse_utc(raw)
            except ValueError:
                raise InvalidInput(f"{name} must be an ISO-8601 date, e.g. 2026-01-31", parameter=name) from None
    if "until" in dates and len((args.get("until") or "").strip()) == 10:
        dates["until"] += timedelta(days=1)  # a date means "up to the end of that day"
    before = (args.get("before") or "").strip()
    if before and not before.isdigit():
        raise InvalidInput("before must be a positive integer", parameter="before")
    return AuditFilters(source=source, actor=(args.get("actor") or "").strip()[:100], outcome=outcome,
                        since=dates.get("since"), until=dates.get("until"),
                        before=int(before) if before else None)


def audit_page(scope: InstitutionScope, filters: AuditFilters, page_size: int = PAGE_SIZE
               ) -> KeysetPage[AuditLog]:
    statement = scope.select(AuditLog)
    if filters.source:
        statement = statement.where(AuditLog.source == filters.source)
    if filters.actor:
        statement = statement.where(AuditLog.actor == filters.actor)
    if filters.outcome == "success":
        statement = statement.where(AuditLog.status < 400)
    elif filters.outcome == "client_error":
        statement = statement.where(AuditLog.status >= 400, AuditLog.status < 500)
    elif filters.outcome == "server_error":
        statement = statement.where(AuditLog.status >= 500)
    if filters.since:
        statement = statement.where(AuditLog.created_at >= filters.since)
    if filters.until:
        statement = statement.where(AuditLog.created_at < filters.until)
    if filters.before is not None:
        statement = statement.where(AuditLog.id < filters.before)
    rows = list(db.session.scalars(statement.order_by(AuditLog.id.desc()).limit(page_size + 1)))
    return KeysetPage.of(rows, page_size)
