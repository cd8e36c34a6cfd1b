"""The streaming export of every matching application as NDJSON: one API record per line.

Each line is exactly the record of the list endpoint (`core.partner_records.application_record`), so a partner can
swap paging for the export without changing its parser. On PostgreSQL the server builds each line
(`json_build_object`) and `COPY` streams them; elsewhere rows are read in batches and encoded here. Memory
stays constant whatever the number of rows.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from sqlalchemy import DateTime, Select, func
from sqlalchemy.sql.elements import Label

from core.csv_export import STREAM_CHUNK_SIZE, postgres_copy, postgres_isoformat_z
from core.extensions import db
from core.listing import ordered_applications
from core.partner_records import RECORD_COLUMNS, application_record
from core.scoping import InstitutionScope

CONTENT_TYPE = "application/x-ndjson"
# COPY's CSV format quotes a value only when it holds the delimiter, the quote character or a line break.
# JSON text from json_build_object never holds a raw control character, so with these two as delimiter and
# quote every line is written exactly as PostgreSQL built it.
_VERBATIM_COPY = "FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01'"


def export_applications_ndjson(scope: InstitutionScope, filters: Mapping[str, Any]) -> Iterator[bytes]:
    """Every application matching `filters` (parsed list filters), one JSON record per line, in list order.

    Resolve the statement before streaming (`ordered_applications` raises InvalidInput for a foreign cycle
    or program), then serve the iterator with `flask.stream_with_context`.
    """
    statement = ordered_applications(scope, filters)
    if db.session.get_bind().dialect.name == "postgresql":
        return postgres_copy(_json_lines(statement), _VERBATIM_COPY)
    return _encoded_lines(statement)


def _encoded_lines(statement: Select) -> Iterator[bytes]:
    chunk: list[str] = []
    size = 0
    for row in db.session.execute(statement.execution_options(yield_per=2000)):
        line = json.dumps(application_record(row), ensure_ascii=False, separators=(",", ":")) + "\n"
        chunk.append(line)
        size += len(line)
        if size >= STREAM_CHUNK_SIZE:
            yield "".join(chunk).encode()
            chunk, size = [], 0
    if chunk:
        yield "".join(chunk).encode()


def _json_lines(statement: Select) -> Select:
    """`statement` reduced to one column: the nested record as JSON text, keys in RECORD_COLUMNS order."""
    groups: dict[str, list] = {}
    for name, column in zip(RECORD_COLUMNS, statement.selected_columns):
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
    return statement.with_only_columns(func.json_build_object(*top).cast(db.Text))
