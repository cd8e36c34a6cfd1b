"""The streaming export of every matching application as NDJSON: one API record per line.

Each line is exactly the record of the list endpoint (`core.partner_records.application_record`), so a partner can
swap paging for the export without changing its parser. On PostgreSQL the server builds each line
(`json_build_object`) and `COPY` streams them; elsewhere rows are read in batches and encoded here. Memory
stays constant whatever the number of rows; like the CSV export it is a `StreamedExport` (one snapshot, the
row count known before the first byte).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from typing import Any

from sqlalchemy import Connection, DateTime, Select, Text, func
from sqlalchemy.sql.elements import Label

from core.csv_export import (
    STREAM_CHUNK_SIZE, StreamedExport, postgres_copy, postgres_isoformat_z, rendered_after_sorting,
)
from core.listing import count_exported, ordered_applications
from core.partner_records import RECORD_COLUMNS, application_record
from core.scoping import InstitutionScope

CONTENT_TYPE = "application/x-ndjson"
# COPY's CSV format quotes a value only when it holds the delimiter, the quote character or a line break.
# JSON text from json_build_object never holds a raw control character, so with these two as delimiter and
# quote every line is written exactly as PostgreSQL built it.
_VERBATIM_COPY = "FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01'"


def export_applications_ndjson(scope: InstitutionScope, filters: Mapping[str, Any]) -> StreamedExport:
    """Every application matching `filters` (parsed list filters), one JSON record per line, in list order.

    Raises InvalidInput (an unknown or foreign cycle/program) before anything is streamed.
    """
    return StreamedExport(ordered_applications(scope, filters), partial(count_exported, scope=scope, filters=filters),
                          _postgres_json_lines, _encoded_lines)


def _postgres_json_lines(connection: Connection, statement: Select) -> Iterator[bytes]:
    return postgres_copy(connection, rendered_after_sorting(statement, _json_line), _VERBATIM_COPY)


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


def _json_line(columns: list) -> list:
    """The record's columns as one: the nested record as JSON text, keys in RECORD_COLUMNS order."""
    groups: dict[str, list] = {}
    for name, column in zip(RECORD_COLUMNS, columns):
        expression = column.element if isinstance(column, Label) else column
        if isinstance(expression.type, DateTime):
            expression = postgres_isoformat_z(expression)
        group, _, field = name.rpartition(".")
        groups.setdefault(group, []).extend([field, expression])
    top = []
    for group, pairs in groups.items():
        if group:
            top.extend([group, func.json_build_object(*pairs)])
        else:
            top.extend(pairs)
    return [func.json_build_object(*top).cast(Text)]
