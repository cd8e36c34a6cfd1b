"""The applicant list as an Excel workbook (.xlsx), written in constant memory.

XlsxWriter's `constant_memory` mode writes each row to a temporary file as soon as the next row starts, so
memory does not grow with the number of rows; the finished workbook (a zip) is written to a temporary file,
which the portal then streams in chunks and deletes. An .xlsx cannot be sent before it is complete (the
zip's directory comes last), so the whole file is built before the response starts: like the CSV export, a
bad filter or a failure is an error page, never a broken download.

Cells are typed: timestamps are Excel dates (UTC, shown as `yyyy-mm-dd hh:mm:ss`), amounts numbers,
booleans booleans, and everything else, phone numbers included, text written with `write_string`, so that
no cell is ever a formula whatever it starts with. The columns are those of the CSV export (RECORD_COLUMNS),
each written by the kind of its field (core.applications.records.APPLICATION_FIELDS).
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

from sqlalchemy import func, select

from core.applications import bulkheads
from core.applications.csv_export import release_snapshot, snapshot_connection
from core.applications.listing.statements import ordered_applications
from core.applications.records import AMOUNT, APPLICATION_FIELDS, BOOLEAN, RECORD_COLUMNS, TIMESTAMP, RecordField
from core.scoping import InstitutionScope

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
STREAM_CHUNK_SIZE = 64 * 1024
SHEET_NAME = "Applicants"
_DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
_AMOUNT_FORMAT = "#,##0.00"
# Workbook options: strings are never turned into formulas, numbers or links behind our back.
_WORKBOOK_OPTIONS = {"constant_memory": True, "strings_to_formulas": False, "strings_to_numbers": False,
                     "strings_to_urls": False, "remove_timezone": True}
_COLUMN_WIDTHS = {"personal.email": 30, "personal.phone": 18, "application.program_name": 28,
                  "application.cycle_name": 18, "application.submitted_at": 20, "application.updated_at": 20}


class XlsxExport:
    """A finished workbook in a temporary file: `total_rows`, `size`, and its bytes when iterated.

    The file is deleted when the iteration ends or `close()` is called (the client went away).
    """

    def __init__(self, path: str, total_rows: int):
        self.path = path
        self.total_rows = total_rows
        self.size = os.path.getsize(path)
        self._file = open(path, "rb")

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        chunk = self._file.read(STREAM_CHUNK_SIZE)
        if not chunk:
            self.close()
            raise StopIteration
        return chunk

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


def export_applications_xlsx(scope: InstitutionScope, filters: Mapping[str, Any]) -> XlsxExport:
    """Every application matching `filters` (parsed list filters) as one workbook, in list order.

    Read from one snapshot in batches (as the CSV export does, so the rows and `total_rows` agree) and
    written in constant memory; InvalidInput for a bad filter before anything is written.
    """
    statement = ordered_applications(scope, filters)
    with bulkheads.hold("export"):  # while the workbook is written (Overloaded when no place comes free)
        return _written_workbook(statement)


def _written_workbook(statement) -> XlsxExport:
    handle, path = tempfile.mkstemp(prefix="karibu-export-", suffix=".xlsx")
    os.close(handle)
    connection = snapshot_connection()
    try:
        total_rows = connection.scalar(select(func.count()).select_from(statement.order_by(None).subquery()))
        rows = connection.execute(statement.execution_options(yield_per=2000))
        _write_workbook(path, rows)
        return XlsxExport(path, total_rows)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        release_snapshot(connection)


def _write_workbook(path: str, rows) -> None:
    import xlsxwriter  # a sizeable library: loaded by the first export, not by every web worker at start

    workbook = xlsxwriter.Workbook(path, {**_WORKBOOK_OPTIONS, "tmpdir": os.path.dirname(path)})
    try:
        sheet = workbook.add_worksheet(SHEET_NAME)
        header = workbook.add_format({"bold": True})
        datetime_format = workbook.add_format({"num_format": _DATETIME_FORMAT})
        amount_format = workbook.add_format({"num_format": _AMOUNT_FORMAT})
        for column, name in enumerate(RECORD_COLUMNS):
            sheet.set_column(column, column, _COLUMN_WIDTHS.get(name, 14))
        sheet.freeze_panes(1, 0)
        for column, name in enumerate(RECORD_COLUMNS):
            sheet.write_string(0, column, name, header)
        writers = [_cell_writer(sheet, field, datetime_format, amount_format) for field in APPLICATION_FIELDS]
        for number, row in enumerate(rows, start=1):
            for column, (write, value) in enumerate(zip(writers, row)):
                if value is not None:
                    write(number, column, value)
    finally:
        workbook.close()


def _cell_writer(sheet, field: RecordField, datetime_format, amount_format):
    """The typed write method of one column, by the kind of its field."""
    if field.kind is TIMESTAMP:
        return lambda row, column, value: sheet.write_datetime(row, column, value, datetime_format)
    if field.kind is AMOUNT:
        return lambda row, column, value: sheet.write_number(row, column, float(value), amount_format)
    if field.kind is BOOLEAN:
        return lambda row, column, value: sheet.write_boolean(row, column, bool(value))
    return lambda row, column, value: sheet.write_string(row, column, str(value))
