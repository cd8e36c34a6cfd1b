"""The applicant list as an Excel workbook (.xlsx), as the list shows it, written in constant memory."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from core.applications import bulkheads
from core.applications.csv_export import release_snapshot, snapshot_connection
from core.applications.list_export import ExportColumn, display_row, sorted_applications
from core.applications.listing.query import Sort
from core.scoping import InstitutionScope

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
STREAM_CHUNK_SIZE = 64 * 1024
_DATETIME_FORMAT = "yyyy-mm-dd hh:mm"
# Workbook options: strings are never turned into formulas, numbers or links behind our back.
_WORKBOOK_OPTIONS = {"constant_memory": True, "strings_to_formulas": False, "strings_to_numbers": False,
                     "strings_to_urls": False, "remove_timezone": True}


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


def export_list_xlsx(scope: InstitutionScope, filters: Mapping[str, Any], sort: Sort,
                     columns: Sequence[ExportColumn], sheet_name: str) -> XlsxExport:
    """The matching applications as one workbook of `columns` (sheet `sheet_name`), in the list's order.

    Raises InvalidInput for a bad filter before anything is written.
    """
    statement = sorted_applications(scope, filters, sort)
    with bulkheads.hold("export"):  # while the workbook is written (Overloaded when no place comes free)
        return _written_workbook(statement, columns, sheet_name)


def _written_workbook(statement, columns: Sequence[ExportColumn], sheet_name: str) -> XlsxExport:
    handle, path = tempfile.mkstemp(prefix="karibu-export-", suffix=".xlsx")
    os.close(handle)
    connection = snapshot_connection()
    try:
        total_rows = connection.scalar(select(func.count()).select_from(statement.order_by(None).subquery()))
        rows = connection.execute(statement.execution_options(yield_per=2000))
        _write_workbook(path, rows, columns, sheet_name)
        return XlsxExport(path, total_rows)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        release_snapshot(connection)


def _write_workbook(path: str, rows, columns: Sequence[ExportColumn], sheet_name: str) -> None:
    import xlsxwriter  # a sizeable library: loaded by the first export, not by every web worker at start

    workbook = xlsxwriter.Workbook(path, {**_WORKBOOK_OPTIONS, "tmpdir": os.path.dirname(path)})
    try:
        # Excel refuses a sheet name longer than 31 characters or holding []:*?/\
        sheet = workbook.add_worksheet("".join(c for c in sheet_name if c not in "[]:*?/\\")[:31])
        header = workbook.add_format({"bold": True})
        datetime_format = workbook.add_format({"num_format": _DATETIME_FORMAT})
        for number, column in enumerate(columns):
            sheet.set_column(number, number, max(14, min(len(column.header) + 2, 40)))
            sheet.write_string(0, number, column.header, header)
        sheet.freeze_panes(1, 0)
        for number, row in enumerate(rows, start=1):
            for column, value in enumerate(display_row(row, columns)):
                if isinstance(value, datetime):
                    sheet.write_datetime(number, column, value, datetime_format)
                elif value is not None and value != "":
                    sheet.write_string(number, column, str(value))
    finally:
        workbook.close()
