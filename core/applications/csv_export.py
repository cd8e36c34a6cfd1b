"""CSV rendering of API records (dotted headers, formula-neutralised text cells, LF lines), and the streaming
export of every matching application.
"""

from __future__ import annotations

import csv
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import partial
from typing import Any

from sqlalchemy import Connection, Select, String, case, func, literal, select

from core.applications import bulkheads
from core.db import db
from core.applications.listing.counts import count_exported
from core.applications.listing.statements import EXPORT_ORDER, ordered_applications
from core.applications.records import (
    AMOUNT, APPLICATION_FIELDS, BOOLEAN, IDENTIFIER, RECORD_COLUMNS, TEXT, TIMESTAMP, record_values,
)
from core.scoping import InstitutionScope

CONTENT_TYPE = "text/csv; charset=utf-8"
FORMULA_TRIGGERS = ("-", "=", "+", "@", "\t", "\r")
# Character codes from here up start no formula (and no empty text): "A" and beyond.
_ABOVE_EVERY_TRIGGER = max(ord(trigger) for trigger in FORMULA_TRIGGERS) + 1
# A phone number in international form, left as it is (same syntax in Python and PostgreSQL regexes).
PLAIN_PHONE_REGEX = r"^\+[0-9]([ .()-]{0,2}[0-9]){6,14}$"
_PLAIN_PHONE = re.compile(PLAIN_PHONE_REGEX)
# Put before the first byte when the file is meant for Excel, which reads UTF-8 only when it sees it.
UTF8_BOM = b"\xef\xbb\xbf"
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
    if text.startswith(FORMULA_TRIGGERS) and not is_plain_phone(text):
        return "'" + text
    return text


def is_plain_phone(text: str) -> bool:
    """Whether `text` is a phone number in international form and nothing else (docs/api.md, "CSV")."""
    return _PLAIN_PHONE.fullmatch(text) is not None


class _LineBuffer:
    """A file-like object whose write() hands back the text, so csv.writer can serve a generator."""

    def write(self, text: str) -> str:
        return text


def iter_csv(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[str]:
    """Stream a CSV document from flat rows (values in ``columns`` order) in chunks of about STREAM_CHUNK_SIZE."""
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
    """writerow() returning one LF-terminated line (cells holding CR or LF are quoted)."""
    writer = csv.writer(_LineBuffer(), lineterminator="\r\n")

    def write_line(values: Sequence[Any]) -> str:
        return writer.writerow(values)[:-2] + LINE_TERMINATOR

    return write_line


class StreamedExport:
    """A streamed export that counted its rows (`total_rows`) and read its first chunk from one snapshot before the
    first byte; raises Overloaded when the `export` bulkhead has no place. Iterate it for the bytes.
    """

    def __init__(self, statement: Select, count: Callable[[Connection], int],
                 on_postgres: Callable[[Connection, Select], Iterator[bytes]],
                 elsewhere: Callable[[Iterable], Iterator[bytes]], prefix: bytes = b""):
        self._permit = bulkheads.acquire("export")  # held until the stream is closed; Overloaded if none
        try:
            self._connection = snapshot_connection()
        except BaseException:
            self._permit.release()
            raise
        try:
            self.total_rows: int = count(self._connection)
            if self._connection.dialect.name == "postgresql":
                self._chunks = on_postgres(self._connection, statement)
            else:
                self._chunks = elsewhere(self._connection.execute(statement.execution_options(yield_per=2000)))
            self._first: bytes | None = prefix + next(self._chunks, b"")
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> StreamedExport:
        return self

    def __next__(self) -> bytes:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        try:
            return next(self._chunks)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the stream: cancel a running COPY, end the snapshot and give the connection back."""
        chunks = getattr(self, "_chunks", None)
        if chunks is not None and hasattr(chunks, "close"):
            chunks.close()
        if not self._connection.closed:
            release_snapshot(self._connection)
        self._permit.release()


def export_applications_csv(scope: InstitutionScope, filters: Mapping[str, Any], *,
                            byte_order_mark: bool = False) -> StreamedExport:
    """Every application matching `filters` as one CSV document in list order, streamed in constant memory.

    Raises InvalidInput (unknown or foreign cycle/program) before any byte; `byte_order_mark` adds the UTF-8 BOM.
    """
    return StreamedExport(ordered_applications(scope, filters), partial(count_exported, scope=scope, filters=filters),
                          _postgres_copy_csv, _csv_lines, prefix=UTF8_BOM if byte_order_mark else b"")


def _csv_lines(rows: Iterable) -> Iterator[bytes]:
    return (chunk.encode() for chunk in iter_csv((record_values(row) for row in rows), RECORD_COLUMNS))


def snapshot_connection() -> Connection:
    """A new connection whose reads all see one snapshot of the database until it is closed."""
    engine = db.engine
    if engine.dialect.name == "postgresql":
        connection = engine.connect().execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        # An export's query is costed high enough for PostgreSQL to compile and optimise it with LLVM, which
        # took longer than it saved on every export measured.
        connection.exec_driver_sql("SET LOCAL jit = off")
        return connection
    # pysqlite begins transactions only before writes: begin the read transaction (a deferred BEGIN, which
    # takes no write lock; under the write-ahead log writers go on while the export reads) explicitly.
    connection = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    driver_connection = connection.connection.driver_connection
    if not driver_connection.in_transaction:
        driver_connection.execute("BEGIN")
    return connection


def release_snapshot(connection: Connection) -> None:
    """End the snapshot of a `snapshot_connection()` and give the connection back."""
    connection.rollback()
    driver_connection = connection.connection.driver_connection
    if isinstance(driver_connection, sqlite3.Connection) and driver_connection.in_transaction:
        driver_connection.rollback()
    connection.close()


def csv_header(columns: Sequence[str]) -> str:
    return _line_writer()(columns)


def _postgres_text_cell(expression):
    """SQL rendering a text column as csv_cell() would for COPY's CSV format (an empty text as NULL)."""
    # Most cells start with a letter, coded above every trigger: for them one function call (the code of the
    # first character, 0 when empty) and one comparison decide. The rest are matched exactly, and the phone
    # pattern runs only for cells that start like a formula: a regular expression is by far the dearest step
    # of a cell, and two on every text cell, as before, were the largest cost of the whole export.
    first = func.ascii(expression)
    quoted = literal("'", String) + expression
    # Only "+" may start a plain phone. One of "+" and digits only (most phone numbers) is kept without the
    # regular expression; those with separators go through it.
    digits_only = (func.length(expression).between(8, 16)
                   & (func.translate(func.substr(expression, 2), "0123456789", "") == ""))
    plus = case((digits_only, expression), (expression.regexp_match(PLAIN_PHONE_REGEX), expression),
                else_=quoted)
    others = {ord(trigger): quoted for trigger in FORMULA_TRIGGERS if trigger != "+"}
    exact = case({0: None, ord("+"): plus, **others}, value=first, else_=expression)
    return case((first < _ABOVE_EVERY_TRIGGER, exact), else_=expression)


# Each kind of field as COPY's CSV format should write it, as csv_cell() writes the record's CSV values.
# Identifiers are made by new_id() and always start with a letter, so they are written as they are;
# timestamps follow isoformat_z(); amounts are numbers, never neutralised.
_COPY_CSV_RENDERINGS = {
    TEXT: _postgres_text_cell,
    IDENTIFIER: lambda column: column,
    BOOLEAN: lambda column: case((column, "true"), else_="false"),
    TIMESTAMP: lambda column: postgres_isoformat_z(column),
    AMOUNT: lambda column: column,
}


def postgres_isoformat_z(expression):
    """SQL text of a naive-UTC timestamp exactly as isoformat_z() writes it (microseconds only when set)."""
    with_fraction = func.to_char(expression, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"', type_=String)
    return func.replace(with_fraction, '.000000Z', 'Z', type_=String)


def rendered_after_sorting(statement: Select, render: Callable[[list], list]) -> Select:
    """`render(columns)` over the rows of `statement` (ordered by EXPORT_ORDER), computed after they are sorted."""
    ordered = statement.offset(0).subquery("ordered")
    return select(*render(list(ordered.c))).order_by(*(ordered.corresponding_column(column)
                                                       for column in EXPORT_ORDER))


def _postgres_csv_cells(columns: list) -> list:
    """The columns of the record's fields, in order, each rendered for COPY's CSV format by its kind."""
    return [_COPY_CSV_RENDERINGS[field.kind](column) for field, column in zip(APPLICATION_FIELDS, columns, strict=True)]


def _postgres_copy_csv(connection: Connection, statement: Select) -> Iterator[bytes]:
    """The header line and the COPY output, in chunks; closing the generator early cancels the COPY."""
    rendered = rendered_after_sorting(statement, _postgres_csv_cells)
    return postgres_copy(connection, rendered, "FORMAT csv", first=csv_header(RECORD_COLUMNS).encode())


def postgres_copy(connection: Connection, statement: Select, options: str, first: bytes = b"") -> Iterator[bytes]:
    """`first`, then the rows of `statement` as `COPY … TO STDOUT (<options>)` writes them, in chunks of about
    STREAM_CHUNK_SIZE bytes; closing the generator early cancels the COPY."""
    compiled = statement.compile(dialect=connection.dialect, compile_kwargs={"render_postcompile": True})
    driver_connection = connection.connection.driver_connection
    with driver_connection.cursor() as cursor:
        with cursor.copy(f"COPY ({compiled}) TO STDOUT ({options})", compiled.params) as copy:
            chunk: list[bytes] = [first] if first else []
            size = len(first)
            for block in copy:
                chunk.append(bytes(block))
                size += len(block)
                if size >= STREAM_CHUNK_SIZE:
                    yield b"".join(chunk)
                    chunk = []
                    size = 0
            if chunk:
                yield b"".join(chunk)
