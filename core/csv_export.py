"""CSV rendering of API records.

Columns are dotted field names of the nested JSON record (``personal.first_name``), so a CSV file and a
JSON page describe the same thing with the same names.

Text cells that a spreadsheet would run as a formula (first character ``=``, ``+``, ``-``, ``@``, tab or
carriage return) are prefixed with a single quote, the OWASP recommendation. Numbers are written as numbers
and never prefixed, so a negative amount stays ``-1`` while a name typed as ``-1`` becomes ``'-1``.
Booleans are ``true``/``false`` as in JSON, a missing value is an empty cell.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

CONTENT_TYPE = "text/csv; charset=utf-8"
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# Rows are gathered into chunks of about this many characters before being handed to the server, so a
# streamed export does not pay one socket write per row.
STREAM_CHUNK_CHARS = 64 * 1024


def csv_cell(value: Any) -> Any:
    """The value to write for one cell: numbers untouched, text neutralised."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float, Decimal)):
        return value
    text = value if isinstance(value, str) else str(value)
    if text.startswith(FORMULA_TRIGGERS):
        return "'" + text
    return text


def dotted_value(record: Mapping[str, Any], column: str) -> Any:
    """``record["a"]["b"]`` for column ``a.b``; None when any level is missing."""
    value: Any = record
    for part in column.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def flatten_record(record: Mapping[str, Any], columns: Sequence[str]) -> list[Any]:
    return [dotted_value(record, column) for column in columns]


class _LineBuffer:
    """A file-like object whose write() hands back the text, so csv.writer can serve a generator."""

    def write(self, text: str) -> str:
        return text


def render_csv(records: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """One page of nested records as a whole CSV document, header row included."""
    return "".join(iter_csv((flatten_record(record, columns) for record in records), columns))


def iter_csv(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[str]:
    """Stream a CSV document from flat rows (values in ``columns`` order).

    Consumes ``rows`` lazily and yields text chunks of about STREAM_CHUNK_CHARS characters, so memory stays
    constant however many rows the source produces.
    """
    writer = csv.writer(_LineBuffer())
    chunk: list[str] = [writer.writerow(columns)]
    size = len(chunk[0])
    for row in rows:
        line = writer.writerow([csv_cell(value) for value in row])
        chunk.append(line)
        size += len(line)
        if size >= STREAM_CHUNK_CHARS:
            yield "".join(chunk)
            chunk = []
            size = 0
    if chunk:
        yield "".join(chunk)
