"""CSV rendering of API records, and the streaming export of every matching application.

Columns are dotted field names of the nested JSON record (``personal.first_name``), so a CSV file and a
JSON page describe the same thing with the same names. Lines end with LF (as PostgreSQL's COPY writes them).

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

from sqlalchemy import Boolean, DateTime, Numeric, Select, String, case, func, literal
from sqlalchemy.sql.elements import Label

from core.extensions import db
from core.listing import ordered_applications
from core.partner_records import RECORD_COLUMNS, record_values
from core.scoping import InstitutionScope

CONTENT_TYPE = "text/csv; charset=utf-8"
FORMULA_TRIGGERS = ("-", "=", "+", "@", "\t", "\r")
# The same characters for PostgreSQL: "-" first in the bracket, where it is literal.
_FORMULA_REGEX = "^[" + "".join(FORMULA_TRIGGERS) + "]"
LINE_TERMINATOR = "\n"
# Rows are gathered into chunks of about this many characters (bytes for COPY output) before being handed
# to the server, so a streamed export does not pay one socket write per row.
STREAM_CHUNK_SIZE = 64 * 1024


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


class _LineBuffer:
    """A file-like object whose write() hands back the text, so csv.writer can serve a generator."""

    def write(self, text: str) -> str:
        return text


def iter_csv(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[str]:
    """Stream a CSV document from flat rows (values in ``columns`` order).

    Consumes ``rows`` lazily and yields text chunks of about STREAM_CHUNK_SIZE characters, so memory stays
    constant however many rows the source produces.
    """
    write_line = _line_writer()
    chunk: list[str] = [write_line(columns)]
    size = len(chunk[0])
    for row in rows:
        line = write_line([csv_cell(value) for value in row])
        chunk.append(line)
        size += len(line)
        if size >= STREAM_CHUNK_SIZE:
            yield "".join(chunk)
            chunk = []
            size = 0
    if chunk:
        yield "".join(chunk)


def _line_writer():
    """writerow() returning one LF-terminated line.

    The csv module quotes a cell containing CR or LF only when both are in its line terminator, so lines are
    written with CRLF and the final CRLF is turned into LF.
    """
    writer = csv.writer(_LineBuffer(), lineterminator="\r\n")

    def write_line(values: Sequence[Any]) -> str:
        return writer.writerow(values)[:-2] + LINE_TERMINATOR

    return write_line


def export_applications_csv(scope: InstitutionScope, filters: Mapping[str, Any]) -> Iterator[bytes]:
    """Every application matching `filters` (parsed list filters) as one CSV document, in list order.

    Constant memory whatever the number of rows. On PostgreSQL the rows are rendered by the server
    (`COPY … TO STDOUT`, with the same cell rules expressed in SQL) and passed through; elsewhere they are
    read in batches and rendered here. Serve it with `flask.stream_with_context`, which keeps the session
    open while the response is written. A stream closed early (the client went away) cancels the COPY and
    rolls the session back.
    """
    statement = ordered_applications(scope, filters)
    if db.session.get_bind().dialect.name == "postgresql":
        yield csv_header(RECORD_COLUMNS).encode()
        rendered = statement.with_only_columns(*(postgres_cell(column) for column in statement.selected_columns))
        yield from postgres_copy(rendered)
    else:
        rows = db.session.execute(statement.execution_options(yield_per=2000))
        for chunk in iter_csv((record_values(row) for row in rows), RECORD_COLUMNS):
            yield chunk.encode()


def csv_header(columns: Sequence[str]) -> str:
    return _line_writer()(columns)


def postgres_cell(column):
    """SQL rendering one selected column as csv_cell() would, for COPY's CSV format.

    Text is neutralised like csv_cell() and an empty text becomes NULL (COPY would quote ``""``; NULL is
    written as an empty cell, as the csv module writes an empty string). Identifiers (primary and foreign
    keys) are made by new_id() and always start with a letter, so they are written as they are. Timestamps
    follow isoformat_z().
    """
    expression = column.element if isinstance(column, Label) else column
    if getattr(expression, "primary_key", False) or getattr(expression, "foreign_keys", None):
        return expression
    column_type = expression.type
    if isinstance(column_type, Boolean):
        return case((expression, "true"), else_="false")
    if isinstance(column_type, DateTime):
        return postgres_isoformat_z(expression)
    if isinstance(column_type, Numeric):
        return expression
    if isinstance(column_type, String):
        return case((expression.regexp_match(_FORMULA_REGEX), literal("'", String) + expression),
                    else_=func.nullif(expression, ""))
    raise TypeError(f"no CSV rendering for column {column} of type {column_type}")


def postgres_isoformat_z(expression):
    """SQL text of a naive-UTC timestamp exactly as isoformat_z() writes it (microseconds only when set)."""
    whole_seconds = func.to_char(expression, 'YYYY-MM-DD"T"HH24:MI:SS', type_=String)
    fraction = case((expression == func.date_trunc("second", expression), "Z"),
                    else_=func.to_char(expression, '.US"Z"', type_=String))
    return whole_seconds + fraction


def postgres_copy(statement: Select, options: str = "FORMAT csv") -> Iterator[bytes]:
    """The rows of `statement` as PostgreSQL's `COPY … TO STDOUT (<options>)` writes them, in chunks of about
    STREAM_CHUNK_SIZE bytes. A stream closed early cancels the COPY and rolls the session back."""
    compiled = statement.compile(dialect=db.session.get_bind().dialect,
                                compile_kwargs={"render_postcompile": True})
    driver_connection = db.session.connection().connection.driver_connection
    try:
        with driver_connection.cursor() as cursor:
            with cursor.copy(f"COPY ({compiled}) TO STDOUT ({options})", compiled.params) as copy:
                chunk: list[bytes] = []
                size = 0
                for block in copy:
                    chunk.append(bytes(block))
                    size += len(block)
                    if size >= STREAM_CHUNK_SIZE:
                        yield b"".join(chunk)
                        chunk = []
                        size = 0
                if chunk:
                    yield b"".join(chunk)
    except GeneratorExit:
        db.session.rollback()  # the cancelled COPY aborted the transaction
        raise
