"""How many applications a listing holds: from the counters when every filter is a counted dimension, else COUNT."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select

from core.applications import bulkheads
from core.applications.counters import count_by_dimensions
from core.applications.listing.statements import (
    filtered_applications, ordered_applications, pipeline_stage, plan_search_for_buffer_cache, referenced_ids,
)
from core.applications.listing.timeouts import time_limited
from core.db import db
from core.models import Applicant, Application, Cycle, Program
from core.scoping import InstitutionScope


def count_applications(scope: InstitutionScope, filters: Mapping[str, Any], cap: int | None = None) -> int:
    """How many applications the listing with these filters holds, from counters or an exact COUNT (to `cap` + 1).

    Raises InvalidInput for bad filters, Overloaded or TookTooLong when the COUNT finds no place or time.
    """
    dimensions = _counted_dimensions(scope, filters)
    if dimensions is not None:
        return count_by_dimensions(scope, dimensions)
    if cap is None:
        statement = filtered_applications(scope, filters, scope.select(Application, func.count()))
    else:
        matching = filtered_applications(scope, filters, scope.select(Application, Application.id)).limit(cap + 1)
        statement = select(func.count()).select_from(matching.subquery())
    with bulkheads.hold("search"), time_limited("count"):
        if "q" in filters and db.session.get_bind().dialect.name == "postgresql":
            plan_search_for_buffer_cache()
        return int(db.session.scalar(statement))


def _counted_dimensions(scope: InstitutionScope, filters: Mapping[str, Any]) -> dict[str, Any] | None:
    """The filters as counter-table dimensions when every one of them is counted, else None."""
    dimensions: dict[str, Any] = {}
    for name, value in filters.items():
        if name == "cycle":
            dimensions["cycle_ids"] = referenced_ids(scope, Cycle, "cycle", value)
        elif name == "program":
            dimensions["program_ids"] = referenced_ids(scope, Program, "program", value)
        elif name == "stage":
            dimensions["stage"] = pipeline_stage(scope, value)
        elif name in ("decision", "paid", "enrolled"):
            dimensions[name] = value
        else:
            return None
    return dimensions


def count_exported(connection, scope: InstitutionScope, filters: Mapping[str, Any]) -> int:
    """How many records `ordered_applications(scope, filters)` holds, read on `connection` (the export's snapshot)."""
    dimensions = _counted_dimensions(scope, filters)
    if dimensions is None:
        statement = ordered_applications(scope, filters)
        return int(connection.scalar(select(func.count()).select_from(statement.order_by(None).subquery())))
    erased = filtered_applications(scope, filters, scope.select(Application, func.count())).where(
        Application.applicant_id.in_(scope.select(Applicant, Applicant.id).where(Applicant.erased_at.is_not(None))))
    return count_by_dimensions(scope, dimensions, connection) - int(connection.scalar(erased))
