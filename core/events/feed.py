"""The events feed: every event of an institution in commit-safe order (`xact_id`, `seq`), with signed cursors.

Why that order never skips an event: docs/design-notes.md, core/events.
"""
from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import literal_column, tuple_

from core.errors import NotFound, problem
from core.db import db
from core.applications.listing.cursor import QueryFingerprint, decode_cursor, encode_cursor, query_fingerprint
from core.applications.listing.pages import Page
from core.applications.listing.query import bad_parameter, parse_limit, text_parameter
from core.applications.listing.statements import page_limit
from core.models import Event
from core.scoping import InstitutionScope
from core.timefmt import parse_utc

EVENT_TYPES = (
    "application.submitted", "application.updated", "decision.sent", "decision.responded",
    "payment.completed", "webhook.test",
)
# The oldest transaction of this database still in progress in the snapshot (else its xmax): every event with a
# lower `xact_id` has ended. Other databases' transactions: docs/design-notes.md, core/events.
_OLDEST_RUNNING_TRANSACTION = literal_column("""(
    SELECT COALESCE(MIN(running.xid::text::bigint), pg_snapshot_xmax(pg_current_snapshot())::text::bigint)
    FROM pg_snapshot_xip(pg_current_snapshot()) AS running(xid)
    WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS other
                      WHERE other.backend_xid = running.xid::xid AND other.datname <> current_database())
)""")


@dataclass(frozen=True)
class FeedPosition:
    institution_id: str
    xact_id: int
    seq: int


@dataclass(frozen=True)
class EventQuery:
    limit: int
    types: tuple[str, ...]
    since: datetime | None
    fingerprint: QueryFingerprint
    after: FeedPosition | None = None


def _parse_types(values: list[str]) -> tuple[str, ...]:
    """`type` repeated and/or comma-separated, any case; each once, in canonical order."""
    wanted = set()
    for value in values:
        if "\x00" in value:
            raise bad_parameter("type", "type must not contain NUL characters")
        for part in value.split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part not in EVENT_TYPES:
                raise bad_parameter("type", f"type must be one of: {', '.join(EVENT_TYPES)}")
            wanted.add(part)
    return tuple(name for name in EVENT_TYPES if name in wanted)


def parse_event_query(args, *, default_limit: int = 50, max_limit: int = 1000) -> EventQuery:
    """Validate the feed's parameters (`args` is a MultiDict: `type` may repeat) and open the cursor."""
    limit = parse_limit(args, default_limit, max_limit)
    types = _parse_types(args.getlist("type"))
    since_text = text_parameter(args, "since")
    since = None
    if since_text:
        try:
            since = parse_utc(since_text)
        except (ValueError, OverflowError):
            raise bad_parameter(
                "since", "since must be an ISO-8601 date or datetime, e.g. 2026-01-31 or 2026-01-31T08:00:00Z"
            ) from None
    canonical = {"type": ",".join(types), "since": since.isoformat() if since else ""}
    fingerprint = query_fingerprint("events", limit, canonical)
    return EventQuery(limit=limit, types=types, since=since, fingerprint=fingerprint,
                      after=_open_cursor(args, fingerprint))


def _open_cursor(args: Mapping[str, str], fingerprint: QueryFingerprint) -> FeedPosition | None:
    token = text_parameter(args, "cursor")
    if not token:
        return None
    try:
        institution_id, xact_id, seq = decode_cursor(token, fingerprint)
        return FeedPosition(str(institution_id), int(xact_id), int(seq))
    except (TypeError, ValueError):
        raise bad_parameter("cursor", "invalid cursor") from None


def fetch_event_page(scope: InstitutionScope, query: EventQuery, cursor_token: str | None) -> Page:
    """One page of events in feed order from ended transactions; the cursor is kept when nothing new arrived."""
    statement = scope.select(Event).where(Event.is_test.is_not(True))  # example sends are not events
    if db.session.get_bind().dialect.name == "postgresql":
        statement = statement.where(Event.xact_id < _OLDEST_RUNNING_TRANSACTION)
    if query.types:
        statement = statement.where(Event.type.in_(query.types))
    if query.since is not None:
        statement = statement.where(Event.occurred_at >= query.since)
    if query.after is not None:
        if not hmac.compare_digest(query.after.institution_id, scope.institution_id):
            raise bad_parameter("cursor", "cursor does not match this query")
        statement = statement.where(
            tuple_(Event.xact_id, Event.seq) > tuple_(query.after.xact_id, query.after.seq))
    statement = statement.order_by(Event.xact_id, Event.seq).limit(page_limit(query.limit + 1))
    events = list(db.session.scalars(statement))
    has_next = len(events) > query.limit
    events = events[:query.limit]
    cursor = cursor_token if query.after is not None else None
    if events:
        cursor = encode_cursor(query.fingerprint, [scope.institution_id, events[-1].xact_id, events[-1].seq])
    return Page(rows=events, has_next=has_next, cursor=cursor)


def get_event(scope: InstitutionScope, event_id: str) -> Event:
    event = scope.get(Event, event_id) if "\x00" not in event_id else None  # no column holds a NUL
    if event is None:
        raise NotFound("Event not found", errors=[problem("path", "event_id", "no event with this id")])
    return event
