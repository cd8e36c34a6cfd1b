"""Filtered, keyset-paginated listings (applications, search, cycles) with signed cursors bound to the query.

A cursor carries the position of the last row of its page (the sort key and `id` for applications: by
default `submitted_at`, `id`; `opens_at`, `id` for cycles), the institution it was issued to and a
fingerprint of the query that produced it: the listing kind, `limit`, the sort (when not the default) and
every filter in canonical form (`format` excluded, so a JSON walk may continue as CSV). It is signed with
SECRET_KEY: a tampered cursor is "invalid cursor", one reused with another query or sort or by another
institution is "cursor does not match this query". Pages are found by keyset (`WHERE (submitted_at, id) >
cursor ORDER BY submitted_at, id`), never by OFFSET, so page N costs what page 1 costs.

Listings that accept `sort` (the portal's) order applications by submission, last update, name or stage,
ascending or descending (`sort=-submitted` is newest first); see `SORT_KEYS` and `fetch_application_page`.

Values are read leniently where that cannot change their meaning: surrounding spaces are trimmed, and
`format`, `decision`, `stage` and the booleans match whatever their case. A `stage` that is not one of the
institution's stage ids is a 400 listing them (an empty page would look like "no applications").
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from itsdangerous import BadData, URLSafeSerializer
from sqlalchemy import Integer, Select, and_, bindparam, func, or_, select, tuple_
from sqlalchemy.orm import selectinload

from core.config import settings
from core.applications.counters import count_by_dimensions
from core.errors import InvalidInput
from core.db import db
from core.models import Applicant, Application, Cycle, Program, Stage
from core.models.admissions import DECISIONS
from core.applications.records import application_select
from core.scoping import InstitutionScope
from core.applications.search_text import fold
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
# Ids are opaque to partners, but a search text shaped like an application id is also looked up as one.
_APPLICATION_ID_SHAPE = re.compile(r"^app_[A-Za-z0-9]+$")
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def bad_parameter(parameter: str, message: str) -> InvalidInput:
    return InvalidInput(message, parameter=parameter)


# Sort keys of the applications listing; `-key` is the same order descending.
SORT_KEYS = ("submitted", "updated", "name", "stage")
# What each sort's cursor stores after the institution id: the kind of each value (the last one is unique).
_SORT_VALUE_KINDS = {
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
class Position:
    """Where the previous page ended (the sort values of its last row, id last), and for which institution
    the cursor was issued."""
    institution_id: str
    values: tuple


@dataclass(frozen=True)
class ApplicationQuery:
    kind: str
    limit: int
    filters: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    after: Position | None = None
    sort: Sort = OLDEST_FIRST


@dataclass(frozen=True)
class CycleQuery:
    limit: int
    fingerprint: str
    after: Position | None = None


@dataclass(frozen=True)
class Page:
    rows: list
    has_next: bool
    cursor: str | None


def _serializer() -> URLSafeSerializer:
    return URLSafeSerializer(settings().SECRET_KEY, salt="karibu.cursor.v1")


def query_fingerprint(kind: str, limit: int, canonical_filters: Mapping[str, str]) -> str:
    canonical = json.dumps({"kind": kind, "limit": limit, "filters": dict(sorted(canonical_filters.items()))},
                           separators=(",", ":"))
    secret = settings().SECRET_KEY.encode()
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


def _open_cursor(args: Mapping[str, str], fingerprint: str,
                 kinds: tuple[str, ...] = ("datetime", "text")) -> Position | None:
    token = args.get("cursor")
    if not token:
        return None
    position = decode_cursor(token, fingerprint)
    try:
        institution_id, *values = position
        if len(values) != len(kinds) or not all(isinstance(value, str) for value in values):
            raise ValueError("cursor shape")
        return Position(str(institution_id), tuple(
            datetime.fromisoformat(value) if kind == "datetime" else value for kind, value in zip(kinds, values)))
    except (TypeError, ValueError):
        raise bad_parameter("cursor", "invalid cursor") from None


def _next_cursor(scope: InstitutionScope, fingerprint: str, *values) -> str:
    return encode_cursor(fingerprint, [scope.institution_id, *(
        value.isoformat() if isinstance(value, datetime) else value for value in values)])


def _check_issuer(scope: InstitutionScope, position: Position) -> None:
    """A cursor issued to another institution does not match this query."""
    if not hmac.compare_digest(position.institution_id, scope.institution_id):
        raise bad_parameter("cursor", "cursor does not match this query")


def _keyset_after(scope: InstitutionScope, position: Position, *columns, descending: bool = False):
    """`(columns) > position` (`<` when descending): the rows after the cursor in this order. The position's
    values are the named parameters of `_after_parameters`."""
    _check_issuer(scope, position)
    bound = tuple(bindparam(name, value, type_=column.type)
                  for (name, value), column in zip(_after_parameters(position).items(), columns))
    after = tuple_(*columns) < tuple_(*bound) if descending else tuple_(*columns) > tuple_(*bound)
    if len(columns) < 3:
        return after
    # Keys from two tables (name: the applicant's text and id, then the application id): the same bound on the
    # first table's keys alone is what its index can start from; without it the walk starts at the beginning.
    leading, values = tuple_(*columns[:-1]), tuple_(*bound[:-1])
    return and_(leading <= values if descending else leading >= values, after)


def _after_parameters(position: Position) -> dict[str, Any]:
    return {f"list_after_{number}": value for number, value in enumerate(position.values)}


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
    """Validate list parameters and open the cursor, if any (unknown parameters are the API's to refuse).

    `sort` is read only when a `default_sort` is given (the portal's listing); otherwise the order is oldest
    submission first. The sort is part of the cursor's fingerprint unless it is that default, so the API's
    cursors stay as they were.
    """
    limit = parse_limit(args, default_limit, max_limit)
    filters, canonical = _parse_filters(args, require_q)
    sort = Sort.parse(text_parameter(args, "sort"), default_sort) if default_sort else OLDEST_FIRST
    if sort != OLDEST_FIRST:
        canonical["sort"] = sort.token
    fingerprint = query_fingerprint(kind, limit, canonical)
    after = _open_cursor(args, fingerprint, _SORT_VALUE_KINDS[sort.key])
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
    return CycleQuery(limit=limit, fingerprint=fingerprint, after=_open_cursor(args, fingerprint))


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


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _referenced_ids(scope: InstitutionScope, model, parameter: str, value: str) -> list[str]:
    """Ids of the institution's cycles/programs whose id or exact name is `value`; 400 when there is none."""
    ids = list(db.session.scalars(
        scope.select(model, model.id).where(or_(model.id == value, model.name == value))))
    if not ids:
        raise bad_parameter(parameter, f"{parameter} must be the id or the exact name of one of your "
                                       f"{'cycles' if model is Cycle else 'programs'}")
    return ids


def pipeline_stage(scope: InstitutionScope, value: str) -> str:
    """The stage id of this institution's pipeline that `value` names (any case); a 400 listing them if none."""
    stages = list(db.session.scalars(scope.select(Stage, Stage.key).order_by(Stage.position)))
    for stage in stages:
        if stage.lower() == value.lower():
            return stage
    raise bad_parameter("stage", f"stage must be one of your pipeline's stage ids: {', '.join(stages)}")


def _search_condition(scope: InstitutionScope, values: Mapping[str, Any], applicant_joined: bool):
    """Applicant text (name, full name, email; folded, so case and accents do not matter) or the id.

    With the applicant already joined (the record select) the text is matched on that row, which lets
    PostgreSQL either walk the (institution, submitted_at, id) index probing each applicant, or start from the
    trigram index on applicants.search_text, whichever is cheaper for `q`. Other statements get the same
    match as `applicant_id IN (…)`. An id-shaped `q` is a UNION of an id lookup and the text match, keeping
    both sides on an index (an OR across the two tables would scan).
    """
    pattern = _bound(values, "q_pattern", Applicant.search_text)
    if applicant_joined:
        text_match = Applicant.search_text.like(pattern, escape="\\")
    else:
        text_match = Application.applicant_id.in_(
            scope.select(Applicant, Applicant.id).where(Applicant.search_text.like(pattern, escape="\\")))
    if "q_id" not in values:
        return text_match
    by_id = select(Application.id).where(Application.id == _bound(values, "q_id", Application.id))
    matching_applicants = scope.select(Applicant, Applicant.id).where(
        Applicant.search_text.like(pattern, escape="\\"))
    by_text = select(Application.id).where(Application.applicant_id.in_(matching_applicants))
    return Application.id.in_(by_id.union_all(by_text))


def _filter_values(scope: InstitutionScope, filters: Mapping[str, Any]) -> dict[str, Any]:
    """The values the list filters bind, by name: cycle and program ids checked against this institution, the
    stage resolved in its pipeline, the search text as a LIKE pattern (and as an id when it is shaped like one).

    Raises InvalidInput when `cycle` or `program` names nothing of this institution (a foreign id included).
    Which names are present is the statement's shape; the values change nothing of its text.
    """
    values: dict[str, Any] = {}
    if "cycle" in filters:
        values["cycle_ids"] = _referenced_ids(scope, Cycle, "cycle", filters["cycle"])
    if "program" in filters:
        values["program_ids"] = _referenced_ids(scope, Program, "program", filters["program"])
    for name in DATE_FILTERS:
        if name in filters:
            values[name] = filters[name]
    if "stage" in filters:
        values["stage"] = pipeline_stage(scope, filters["stage"])
    for name in ("decision", "enrolled", "paid"):
        if name in filters:
            values[name] = filters[name]
    if "q" in filters:
        values["q_pattern"] = _like_pattern(fold(filters["q"]))
        if _APPLICATION_ID_SHAPE.match(filters["q"]):
            values["q_id"] = filters["q"]
    return values


_PARAMETER_PREFIX = "list_"


def _bound(values: Mapping[str, Any], name: str, column, expanding: bool = False):
    """Filter value `name` as the named parameter `list_<name>`. A statement kept for reuse is run with each
    request's values under the same names (see `_page_statement`)."""
    return bindparam(_PARAMETER_PREFIX + name, values[name], type_=column.type, expanding=expanding)


# Each filter value's condition on the applications, in the order they are applied.
_CONDITIONS = {
    "cycle_ids": lambda values: Application.cycle_id.in_(_bound(values, "cycle_ids", Application.cycle_id, True)),
    "program_ids": lambda values: Application.program_id.in_(
        _bound(values, "program_ids", Application.program_id, True)),
    "submitted_after": lambda values: Application.submitted_at >= _bound(
        values, "submitted_after", Application.submitted_at),
    "submitted_before": lambda values: Application.submitted_at < _bound(
        values, "submitted_before", Application.submitted_at),
    "updated_since": lambda values: Application.updated_at >= _bound(values, "updated_since", Application.updated_at),
    "stage": lambda values: Application.stage == _bound(values, "stage", Application.stage),
    "decision": lambda values: Application.decision == _bound(values, "decision", Application.decision),
    "enrolled": lambda values: Application.enrolled == _bound(values, "enrolled", Application.enrolled),
    "paid": lambda values: Application.paid == _bound(values, "paid", Application.paid),
}


def _filtered(scope: InstitutionScope, values: Mapping[str, Any], statement: Select | None = None) -> Select:
    """`statement` (default: the record select) with the conditions of `_filter_values`' values."""
    applicant_joined = statement is None
    statement = application_select(scope) if statement is None else statement
    conditions = [condition(values) for name, condition in _CONDITIONS.items() if name in values]
    if "q_pattern" in values:
        conditions += [_search_condition(scope, values, applicant_joined), not_erased(scope)]
    return statement.where(*conditions) if conditions else statement


def filtered_applications(scope: InstitutionScope, filters: Mapping[str, Any], statement: Select | None = None):
    """Apply the list filters to `statement` (default: the record select of this institution).

    Raises InvalidInput when `cycle` or `program` names nothing of this institution (a foreign id included).
    """
    return _filtered(scope, _filter_values(scope, filters), statement)


def not_erased(scope: InstitutionScope):
    """Leaves out applications of applicants whose personal data was erased (search and exports)."""
    return Application.applicant_id.not_in(
        scope.select(Applicant, Applicant.id).where(Applicant.erased_at.is_not(None)))


def _plan_search_for_buffer_cache() -> None:
    """Steer the PostgreSQL planner of this transaction's search towards plans that stay fast.

    A search page either walks the (submitted_at, id) index and checks each applicant, or starts from the
    trigram index and sorts the matches. With the default `effective_cache_size` the planner costs the walk's
    applicant lookups as almost free, so texts shared by 0.1 to 1% of applicants were walked through tens of
    thousands of lookups that miss PostgreSQL's own buffers (0.3 to 1.4 s at a million applications). Telling
    it, for this transaction only, that the cache is `shared_buffers` makes it walk only for common texts;
    parallel workers are off because starting them costs more than these short queries.
    """
    db.session.execute(select(
        func.set_config("effective_cache_size", func.current_setting("shared_buffers"), True),
        func.set_config("max_parallel_workers_per_gather", "0", True)))


# The order of exports: the list's default order.
EXPORT_ORDER = (Application.submitted_at, Application.id)


def ordered_applications(scope: InstitutionScope, filters: Mapping[str, Any]) -> Select:
    """Every matching application record, in list order (for exports; erased applicants left out)."""
    return filtered_applications(scope, filters).where(not_erased(scope)).order_by(*EXPORT_ORDER)


def _order_columns(sort: Sort) -> tuple:
    """The keyset columns of a sort (an index of migration 0014 or earlier serves each, forwards or backwards)."""
    if sort.key == "updated":
        return Application.updated_at, Application.id
    if sort.key == "name":
        # The applicant's folded "first last email": case and accents do not change the order.
        return Applicant.search_text, Applicant.id, Application.id
    return Application.submitted_at, Application.id


def _row_position(sort: Sort):
    if sort.key == "updated":
        return lambda row: (row.updated_at, row.id)
    if sort.key == "name":
        return lambda row: (row.sort_name, row.applicant_id, row.id)
    if sort.key == "stage":
        return lambda row: (row.stage, row.submitted_at, row.id)
    return lambda row: (row.submitted_at, row.id)


def fetch_application_page(scope: InstitutionScope, query: ApplicationQuery) -> Page:
    """One page in the query's order, by keyset: page N costs what page 1 costs.

    Every order ends with the application id, so rows that tie on the sort value are never skipped or
    repeated between pages. `stage` follows the institution's pipeline (newest submission first within a
    stage), one index range per stage, so it needs no sort of the whole set either.
    """
    values = _filter_values(scope, query.filters)
    if "q" in query.filters and db.session.get_bind().dialect.name == "postgresql":
        _plan_search_for_buffer_cache()
    sort = query.sort
    if sort.key == "stage":
        rows = _rows_by_stage(scope, query, _filtered(scope, values))
    else:
        parameters = {_PARAMETER_PREFIX + name: value for name, value in values.items()}
        if query.after is not None:
            _check_issuer(scope, query.after)
            parameters.update(_after_parameters(query.after))
        shape = (scope, tuple(values), sort, query.after is not None, query.limit)
        statement = _page_statement(shape, lambda: _ordered_page(scope, values, query))
        rows = list(db.session.execute(statement, parameters))
    return _page(rows, query.limit, scope, query.fingerprint, _row_position(sort))


def _ordered_page(scope: InstitutionScope, values: Mapping[str, Any], query: ApplicationQuery) -> Select:
    """The page statement of a sort other than `stage`: filters, cursor condition, order, limit + 1 rows."""
    statement = _filtered(scope, values)
    sort = query.sort
    if sort.key == "name":
        # The applicant's own institution condition lets its (institution, search_text, id) index give the
        # order, joined to each applicant's applications.
        statement = statement.add_columns(Applicant.search_text.label("sort_name")).where(scope.owns(Applicant))
    columns = _order_columns(sort)
    if query.after is not None:
        statement = statement.where(_keyset_after(scope, query.after, *columns, descending=sort.descending))
    statement = statement.order_by(*(column.desc() if sort.descending else column for column in columns))
    return statement.limit(page_limit(query.limit + 1))


# Page statements already built, by shape: institution, which filters, sort, whether a cursor, limit.
_PAGE_STATEMENTS: dict[tuple, Select] = {}
_PAGE_STATEMENTS_KEPT = 512


def _page_statement(shape: tuple, build) -> Select:
    """The statement of this shape, built once and run again with each request's values (every value of a
    page statement is a named parameter, `list_…`, given at execution), or built now.

    Building the record select with its filters and generating its cache key cost SQLAlchemy more than the
    rest of the query's execution (0.1 and 0.2 ms of a list request's 3.3 ms of Python here); a statement
    object run again has both already. At most `_PAGE_STATEMENTS_KEPT` are kept (then the lot is forgotten).
    """
    statement = _PAGE_STATEMENTS.get(shape)
    if statement is None:
        if len(_PAGE_STATEMENTS) >= _PAGE_STATEMENTS_KEPT:
            _PAGE_STATEMENTS.clear()
        statement = _PAGE_STATEMENTS[shape] = build()
    return statement


def _rows_by_stage(scope: InstitutionScope, query: ApplicationQuery, statement: Select) -> list:
    """Up to limit + 1 rows in pipeline order (reversed when descending), newest submission first within a
    stage: one keyset query per stage, from the cursor's stage on, until the page is full."""
    stages = [pipeline_stage(scope, query.filters["stage"])] if "stage" in query.filters \
        else list(db.session.scalars(scope.select(Stage, Stage.key).order_by(Stage.position)))
    if query.sort.descending:
        stages.reverse()
    within_stage = (Application.submitted_at, Application.id)
    first, after = 0, None
    if query.after is not None:
        _check_issuer(scope, query.after)
        stage, *after = query.after.values
        if stage not in stages:
            raise bad_parameter("cursor", "invalid cursor")
        first = stages.index(stage)
    rows: list = []
    for stage in stages[first:]:
        in_stage = statement.where(Application.stage == stage)
        if after is not None and stage == stages[first]:
            in_stage = in_stage.where(tuple_(*within_stage) < tuple_(*after))
        in_stage = in_stage.order_by(*(column.desc() for column in within_stage))
        rows.extend(db.session.execute(in_stage.limit(page_limit(query.limit + 1 - len(rows)))))
        if len(rows) > query.limit:
            break
    return rows


def count_applications(scope: InstitutionScope, filters: Mapping[str, Any], cap: int | None = None) -> int:
    """How many applications the listing with these filters holds (all pages together).

    Filters that are all counted dimensions (cycle, program, stage, decision, paid, enrolled) are answered
    from the counter tables in constant time; any other filter (search, dates) is an exact COUNT of the
    same filtered statement the pages read, which stops at `cap` + 1 rows when a cap is given (a search
    shared by a sixth of a million applications is not counted row by row on every keystroke).
    """
    dimensions = _counted_dimensions(scope, filters)
    if dimensions is not None:
        return count_by_dimensions(scope, dimensions)
    if "q" in filters and db.session.get_bind().dialect.name == "postgresql":
        _plan_search_for_buffer_cache()
    if cap is None:
        return int(db.session.scalar(filtered_applications(scope, filters, scope.select(Application, func.count()))))
    matching = filtered_applications(scope, filters, scope.select(Application, Application.id)).limit(cap + 1)
    return int(db.session.scalar(select(func.count()).select_from(matching.subquery())))


def _counted_dimensions(scope: InstitutionScope, filters: Mapping[str, Any]) -> dict[str, Any] | None:
    """The filters as counter-table dimensions when every one of them is counted, else None."""
    dimensions: dict[str, Any] = {}
    for name, value in filters.items():
        if name == "cycle":
            dimensions["cycle_ids"] = _referenced_ids(scope, Cycle, "cycle", value)
        elif name == "program":
            dimensions["program_ids"] = _referenced_ids(scope, Program, "program", value)
        elif name == "stage":
            dimensions["stage"] = pipeline_stage(scope, value)
        elif name in ("decision", "paid", "enrolled"):
            dimensions[name] = value
        else:
            return None
    return dimensions


def count_exported(connection, scope: InstitutionScope, filters: Mapping[str, Any]) -> int:
    """How many records `ordered_applications(scope, filters)` holds, read on `connection` (an export's
    snapshot, so the count and the streamed rows agree exactly).

    Counted dimensions are answered from the counter tables, less the applications of erased applicants
    (exports leave them out; there are few): a million-row export no longer reads its rows twice. Other
    filters are an exact COUNT of the export's own statement.
    """
    dimensions = _counted_dimensions(scope, filters)
    if dimensions is None:
        statement = ordered_applications(scope, filters)
        return int(connection.scalar(select(func.count()).select_from(statement.order_by(None).subquery())))
    erased = filtered_applications(scope, filters, scope.select(Application, func.count())).where(
        Application.applicant_id.in_(scope.select(Applicant, Applicant.id).where(Applicant.erased_at.is_not(None))))
    return count_by_dimensions(scope, dimensions, connection) - int(connection.scalar(erased))


def page_limit(rows: int):
    """A LIMIT written into the statement's text rather than sent as a parameter.

    Statements run five times on a connection become prepared statements; PostgreSQL then plans them once
    (a generic plan) only when that plan is estimated no dearer than planning each time. With `LIMIT $n` the
    generic plan must assume an unknown row count and never wins, so a page query was planned on every
    request (about 1.2 ms for the application list, more than running it). With the number in the text, the
    plan is kept; a different limit is another statement.
    """
    return bindparam("page_limit", rows, type_=Integer, literal_execute=True)


def _page(rows: list, limit: int, scope: InstitutionScope, fingerprint: str, position) -> Page:
    """Drop the look-ahead row (it only tells whether a next page exists) and sign the last row's position."""
    has_next = len(rows) > limit
    rows = rows[:limit]
    cursor = _next_cursor(scope, fingerprint, *position(rows[-1])) if has_next else None
    return Page(rows=rows, has_next=has_next, cursor=cursor)


def fetch_applications_by_id(scope: InstitutionScope, ids: list[str]) -> tuple[list, list[str]]:
    """(rows in the order of `ids`, ids not found in this institution)."""
    found = {row.id: row for row in db.session.execute(application_select(scope).where(Application.id.in_(ids)))}
    return [found[i] for i in ids if i in found], [i for i in ids if i not in found]


def fetch_cycle_page(scope: InstitutionScope, query: CycleQuery) -> Page:
    """One page of cycles (programs loaded) in (`opens_at`, `id`) order, by keyset."""
    statement = scope.select(Cycle).options(selectinload(Cycle.programs))
    if query.after is not None:
        statement = statement.where(_keyset_after(scope, query.after, Cycle.opens_at, Cycle.id))
    statement = statement.order_by(Cycle.opens_at, Cycle.id).limit(page_limit(query.limit + 1))
    cycles = list(db.session.scalars(statement))
    return _page(cycles, query.limit, scope, query.fingerprint, lambda cycle: (cycle.opens_at, cycle.id))
