"""The portal's exports of the applicant list as the list shows it: its columns, its sort, its words.

The partner API's exports (`csv_export`, `ndjson_export`) keep the spec's field names and codes; these are for
people. The caller (the portal) describes each column as an `ExportColumn`: a header already in the reader's
language and a function giving the cell of a row of `application_select` (text in words, or a naive datetime
already in the display zone, which the header names). Everything the functions need (translations, the zone) is
resolved before the stream starts, because the stream runs after the request has ended.

The CSV streams in constant memory from one snapshot that also counts the rows (`StreamedExport`), with the
same formula-injection guard as every CSV of the service (`csv_cell`); the workbook (`xlsx_export`) writes
datetimes as Excel dates and everything else as text.
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

    The orders are the list pages' (core.applications.listing.pages): by name on the applicant's folded text,
    by stage in the institution's pipeline order with the newest submission first within a stage, by a
    time with the id breaking ties. Raises InvalidInput for a bad filter, like the list.
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
    """The matching applications as one CSV document of `columns`, in the list's order, streamed in constant
    memory from one snapshot (see StreamedExport; InvalidInput for a bad filter before any byte).
    `byte_order_mark` starts the file with the UTF-8 BOM, for Excel."""
    headers = [column.header for column in columns]

    def lines(rows: Iterable) -> Iterator[bytes]:
        return (chunk.encode() for chunk in iter_csv((_csv_cells(row, columns) for row in rows), headers))

    def on_postgres(connection, statement: Select) -> Iterator[bytes]:
        return lines(connection.execute(statement.execution_options(yield_per=2000)))

    return StreamedExport(sorted_applications(scope, filters, sort),
                          partial(count_exported, scope=scope, filters=filters), on_postgres, lines,
                          prefix=UTF8_BOM if byte_order_mark else b"")
