"""Pages of the listing, each found by keyset: applications in any sort, applications by id, cycles."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Select, tuple_
from sqlalchemy.orm import selectinload

from core.applications import bulkheads
from core.applications.listing.cursor import QueryFingerprint, check_issuer, next_cursor
from core.applications.listing.query import ApplicationQuery, CycleQuery, Sort, bad_parameter
from core.applications.listing.statements import (
    PARAMETER_PREFIX, after_parameters, filter_values, filtered, keyset_after, ordered_page, page_limit,
    page_statement, pipeline_stage, plan_search_for_buffer_cache,
)
from core.applications.listing.timeouts import time_limited
from core.applications.records import application_select
from core.db import db, read_once
from core.models import Application, Cycle, Stage
from core.scoping import InstitutionScope


@dataclass(frozen=True)
class Page:
    rows: list
    has_next: bool
    cursor: str | None


def fetch_application_page(scope: InstitutionScope, query: ApplicationQuery) -> Page:
    """One page in the query's order, by keyset (every order ends with the id).

    Raises InvalidInput for bad filters; a text search may raise Overloaded or TookTooLong (503s).
    """
    values = filter_values(scope, query.filters)
    if "q" not in query.filters:
        return _application_page(scope, query, values)
    with bulkheads.hold("search"), time_limited("search"):
        if db.session.get_bind().dialect.name == "postgresql":
            plan_search_for_buffer_cache()
        return _application_page(scope, query, values)


def _application_page(scope: InstitutionScope, query: ApplicationQuery, values: dict) -> Page:
    sort = query.sort
    if sort.key == "stage":
        rows = _rows_by_stage(scope, query, filtered(scope, values))
    else:
        parameters = {PARAMETER_PREFIX + name: value for name, value in values.items()}
        if query.after is not None:
            check_issuer(scope, query.after)
            parameters.update(after_parameters(query.after))
        shape = (scope, tuple(values), sort, query.after is not None, query.limit)
        # A search runs in the transaction its statement timeout and planner settings were set in.
        rows = page_statement(shape, lambda: ordered_page(scope, values, query)).rows(parameters)
    return _page(rows, query.limit, scope, query.fingerprint, _row_position(sort))


def _row_position(sort: Sort):
    if sort.key == "updated":
        return lambda row: (row.updated_at, row.id)
    if sort.key == "name":
        return lambda row: (row.sort_name, row.applicant_id, row.id)
    if sort.key == "stage":
        return lambda row: (row.stage, row.submitted_at, row.id)
    return lambda row: (row.submitted_at, row.id)


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
        check_issuer(scope, query.after)
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


def _page(rows: list, limit: int, scope: InstitutionScope, fingerprint: QueryFingerprint, position) -> Page:
    """Drop the look-ahead row (it only tells whether a next page exists) and sign the last row's position."""
    has_next = len(rows) > limit
    rows = rows[:limit]
    cursor = next_cursor(scope, fingerprint, *position(rows[-1])) if has_next else None
    return Page(rows=rows, has_next=has_next, cursor=cursor)


def fetch_applications_by_id(scope: InstitutionScope, ids: list[str]) -> tuple[list, list[str]]:
    """(rows in the order of `ids`, ids not found in this institution)."""
    found = {row.id: row for row in read_once(application_select(scope).where(Application.id.in_(ids)), {})}
    return [found[i] for i in ids if i in found], [i for i in ids if i not in found]


def fetch_cycle_page(scope: InstitutionScope, query: CycleQuery) -> Page:
    """One page of cycles (programs loaded) in (`opens_at`, `id`) order, by keyset."""
    statement = scope.select(Cycle).options(selectinload(Cycle.programs))
    if query.after is not None:
        statement = statement.where(keyset_after(scope, query.after, Cycle.opens_at, Cycle.id))
    statement = statement.order_by(Cycle.opens_at, Cycle.id).limit(page_limit(query.limit + 1))
    cycles = list(db.session.scalars(statement))
    return _page(cycles, query.limit, scope, query.fingerprint, lambda cycle: (cycle.opens_at, cycle.id))
