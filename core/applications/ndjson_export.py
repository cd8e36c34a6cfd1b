"""The streaming export of every matching application as NDJSON: one list-endpoint record per line."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from json.encoder import encode_basestring
from typing import Any

from sqlalchemy import Connection, Select, Text, cast

from core.applications.csv_export import (
    STREAM_CHUNK_SIZE, StreamedExport, postgres_copy, postgres_isoformat_z, rendered_after_sorting,
)
from core.applications.listing.counts import count_exported
from core.applications.listing.statements import ordered_applications
from core.applications.records import (
    AMOUNT, APPLICATION_FIELDS, BOOLEAN, IDENTIFIER, TEXT, TIMESTAMP, RecordField, application_record, record_text,
)
from core.scoping import InstitutionScope

CONTENT_TYPE = "application/x-ndjson"

def export_applications_ndjson(scope: InstitutionScope, filters: Mapping[str, Any]) -> StreamedExport:
    """Every application matching `filters` (parsed list filters), one JSON record per line, in list order.

    Raises InvalidInput (an unknown or foreign cycle/program) before anything is streamed.
    """
    return StreamedExport(ordered_applications(scope, filters), partial(count_exported, scope=scope, filters=filters),
                          _postgres_json_lines, _encoded_lines)


def _postgres_json_lines(connection: Connection, statement: Select) -> Iterator[bytes]:
    """NDJSON lines of `statement`: PostgreSQL sends the plain columns by COPY and this process writes the JSON."""
    records = _CopyTextRecords(APPLICATION_FIELDS)
    rendered = rendered_after_sorting(statement, records.selected)
    unfinished = b""
    for chunk in postgres_copy(connection, rendered, "FORMAT text"):
        complete, _, unfinished = (unfinished + chunk).rpartition(b"\n")
        if complete:
            yield records.lines(complete)
    if unfinished:
        yield records.lines(unfinished)


def _encoded_lines(rows: Iterable) -> Iterator[bytes]:
    chunk: list[str] = []
    size = 0
    for row in rows:
        line = json.dumps(application_record(row), ensure_ascii=False, separators=(",", ":")) + "\n"
        chunk.append(line)
        size += len(line)
        if size >= STREAM_CHUNK_SIZE:
            yield "".join(chunk).encode()
            chunk, size = [], 0
    if chunk:
        yield "".join(chunk).encode()


# In a row of COPY's text format a tab, a line break or a backslash in a value is written escaped, so a row
# without `"`, a backslash or a control character other than the separating tabs holds nothing JSON must escape.
_NEEDS_JSON_ESCAPING = re.compile(r'["\\\x00-\x08\x0a-\x1f]')
# The same bytes, but for the line feeds between rows: checked once over a whole chunk (far cheaper than a
# search in each row), as most chunks hold no such row.
_JSON_ESCAPED_BYTES = b'"\\' + bytes(code for code in range(0x20) if code not in (0x09, 0x0a))
_COPY_TEXT_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_COPY_TEXT_CONTROL = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
# Each kind of field as COPY's text format should send it for the line template: the JSON value, unquoted.
_COPY_TEXT_RENDERINGS = {
    TEXT: lambda column: column,
    IDENTIFIER: lambda column: column,
    BOOLEAN: lambda column: cast(column, Text),
    TIMESTAMP: postgres_isoformat_z,
    AMOUNT: lambda column: column,
}


class _CopyTextRecords:
    """NDJSON lines from rows of COPY's text format holding a record's columns (in APPLICATION_FIELDS order)."""

    def __init__(self, fields: tuple[RecordField, ...]):
        self.kinds = [field.kind for field in fields]
        self.strings = [kind.json_type == "string" for kind in self.kinds]
        self.fast_template = record_text(['"%s"' if string else "%s" for string in self.strings], fields) + "\n"
        self.token_template = record_text(["%s"] * len(fields), fields) + "\n"

    def selected(self, columns: list) -> list:
        """The columns to COPY (those of the record's fields, in order), each rendered for JSON by its kind."""
        return [_COPY_TEXT_RENDERINGS[kind](column) for kind, column in zip(self.kinds, columns, strict=True)]

    def lines(self, rows: bytes) -> bytes:
        """The NDJSON of `rows` (COPY text rows separated by line feeds, without the last one)."""
        fast_template = self.fast_template
        if len(rows.translate(None, _JSON_ESCAPED_BYTES)) == len(rows):
            return "".join([fast_template % tuple(row.split("\t")) for row in rows.decode().split("\n")]).encode()
        needs_escaping = _NEEDS_JSON_ESCAPING.search
        return "".join([fast_template % tuple(row.split("\t")) if not needs_escaping(row)
                        else self.token_template % tuple(self._tokens(row))
                        for row in rows.decode().split("\n")]).encode()

    def _tokens(self, row: str) -> list[str]:
        tokens = []
        for string, field in zip(self.strings, row.split("\t")):
            if field == "\\N":
                tokens.append("null")
                continue
            value = _COPY_TEXT_ESCAPE.sub(lambda match: _COPY_TEXT_CONTROL.get(match[1], match[1]), field)
            tokens.append(encode_basestring(value) if string else value)
        return tokens
