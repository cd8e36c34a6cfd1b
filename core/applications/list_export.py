"""The portal's exports of the applicant list as the list shows it: its columns, its sort, its words.

Columns (`ExportColumn`) are resolved before the stream starts, as it runs after the request has ended.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Select, case

from core.applications.csv_export import UTF8_BOM, StreamedExport, iter_csv
from core.applications.listing.counts import count_exported
from core.applications.listing.query import Sort
from core.applications.listing.statements import filtered_applications, not_erased
from core.applications.records import APPLICATION_FIELDS
from core.db import db
from core.models import Applicant, Application, Stage
from core.scoping import InstitutionScope

# Times as text in CSV cells: sortable, unambiguous in every language; the header names the zone.
CSV_DATETIME_FORMAT = "%Y-%m-%d %H:%M"
_POSITIONS = {field.name: position for position, field in enumerate(APPLICATION_FIELDS)}


@dataclass(frozen=True)
class ExportColumn:
    """One column of a list export: its header as the reader reads it, and its cell for a row (text, None for
    an empty cell, or a naive datetime in the zone the header names)."""
    header: str
    value: Callable[[Any], str | datetime | None]


def field(name: str) -> Callable[[Any], Any]:
    """The value of record field `name` (a dotted name of APPLICATION_FIELDS) in a row of `application_select`."""
    position = _POSITIONS[name]
    return lambda row: row[position]


def sorted_applications(scope: InstitutionScope, filters: Mapping[str, Any], sort: Sort) -> Select:
    """Every matching application record (erased applicants left out) in the order of the list's `sort`.

    Raises InvalidInput for a bad filter.
    """
    statement = filtered_applications(scope, filters).where(not_erased(scope))
    if sort.key == "stage":
        keys = list(db.session.scalars(scope.select(Stage, Stage.key).order_by(Stage.position)))
        position = case({key: number for number, key in enumerate(keys)}, value=Application.stage,
                        else_=len(keys)) if keys else Application.stage
        return statement.order_by(position.desc() if sort.descending else position,
                                  Application.submitted_at.desc(), Application.id.desc())
    columns = {"name": (Applicant.search_text, Applicant.id, Application.id),
               "updated": (Application.updated_at, Application.id)}.get(
        sort.key, (Application.submitted_at, Application.id))
    return statement.order_by(*(column.desc() if sort.descending else column for column in columns))


def display_row(row, columns: Sequence[ExportColumn]) -> list:
    return [column.value(row) for column in columns]


def _csv_cells(row, columns: Sequence[ExportColumn]) -> list:
    cells = display_row(row, columns)
    return [cell.strftime(CSV_DATETIME_FORMAT) if isinstance(cell, datetime) else cell for cell in cells]


def export_list_csv(scope: InstitutionScope, filters: Mapping[str, Any], sort: Sort,
                    columns: Sequence[ExportColumn], *, byte_order_mark: bool = False) -> StreamedExport:
    """The matching applications as one CSV of `columns` in the list's order, streamed from one snapshot.

    Raises InvalidInput for a bad filter before any byte; `byte_order_mark` adds the UTF-8 BOM.
    """
    headers = [column.header for column in columns]

    def lines(rows: Iterable) -> Iterator[bytes]:
        return (chunk.encode() for chunk in iter_csv((_csv_cells(row, columns) for row in rows), headers))

    def on_postgres(connection, statement: Select) -> Iterator[bytes]:
        return lines(connection.execute(statement.execution_options(yield_per=2000)))

    return StreamedExport(sorted_applications(scope, filters, sort),
                          partial(count_exported, scope=scope, filters=filters), on_postgres, lines,
                          prefix=UTF8_BOM if byte_order_mark else b"")
