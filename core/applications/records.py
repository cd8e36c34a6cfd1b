"""The records of the partner API (applications and cycles), nested JSON and flat CSV from the same row.

An application record is described by one table, `APPLICATION_FIELDS`.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Select

from core.models import Applicant, Application, Cycle, Program
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z


def _amount_for_json(amount: Decimal | None) -> float | None:
    return float(amount) if amount is not None else None


@dataclass(frozen=True)
class FieldKind:
    """How the values of a kind of field are written in JSON (`json_type`, `to_json`) and CSV (`to_csv`)."""

    name: str
    json_type: str
    to_json: Callable[[Any], Any] | None = None
    to_csv: Callable[[Any], Any] | None = None


# Text as stored; in CSV a text that a spreadsheet would run as a formula is neutralised.
TEXT = FieldKind("text", "string")
# An id made by new_id(), or a reference: text that always starts with a letter, so CSV writes it as it is.
IDENTIFIER = FieldKind("identifier", "string")
# true/false in JSON and in CSV.
BOOLEAN = FieldKind("boolean", "boolean", bool, bool)
# A naive-UTC timestamp, ISO-8601 with `Z` (microseconds only when set) in JSON and in CSV.
TIMESTAMP = FieldKind("timestamp", "string", isoformat_z, isoformat_z)
# A Decimal: a JSON number (`50000.0`), in CSV the Decimal with its two places (`50000.00`).
AMOUNT = FieldKind("amount", "number", _amount_for_json, None)


@dataclass(frozen=True, eq=False)
class RecordField:
    """One field of the application record: its dotted `name` (JSON path and CSV header) and selected `column`."""

    name: str
    column: ColumnElement
    kind: FieldKind

    @property
    def csv_header(self) -> str:
        return self.name


# The application record, in record order: JSON key order, CSV column order and select order. Fields of one
# group (`personal`, `application`, `payment`) stay together.
APPLICATION_FIELDS: tuple[RecordField, ...] = (
    RecordField("id", Application.id, IDENTIFIER),
    RecordField("reference", Application.reference, IDENTIFIER),
    RecordField("applicant_id", Application.applicant_id, IDENTIFIER),
    RecordField("personal.first_name", Applicant.first_name, TEXT),
    RecordField("personal.last_name", Applicant.last_name, TEXT),
    RecordField("personal.email", Applicant.email, TEXT),
    RecordField("personal.phone", Applicant.phone, TEXT),
    RecordField("application.program_id", Application.program_id, IDENTIFIER),
    RecordField("application.program_name", Program.name.label("program_name"), TEXT),
    RecordField("application.cycle_id", Application.cycle_id, IDENTIFIER),
    RecordField("application.cycle_name", Cycle.name.label("cycle_name"), TEXT),
    RecordField("application.stage", Application.stage, TEXT),
    RecordField("application.decision", Application.decision, TEXT),
    RecordField("application.enrolled", Application.enrolled, BOOLEAN),
    RecordField("application.submitted_at", Application.submitted_at, TIMESTAMP),
    RecordField("application.submitted_by_staff", Application.submitted_by_staff, BOOLEAN),
    RecordField("application.updated_at", Application.updated_at, TIMESTAMP),
    RecordField("payment.paid", Application.paid, BOOLEAN),
    RecordField("payment.currency", Application.currency, TEXT),
    RecordField("payment.amount", Application.amount, AMOUNT),
)

# Dotted names in record order: the CSV header and the JSON key order agree.
RECORD_COLUMNS = tuple(field.csv_header for field in APPLICATION_FIELDS)

CYCLE_COLUMNS = ("id", "name", "opens_at", "closes_at", "status", "programs.id", "programs.name")
CYCLE_LIST_SEPARATOR = "; "

_FIELD_NAME = re.compile(r"^[a-z_]+(\.[a-z_]+)?$")


def _check_layout(fields: Sequence[RecordField]) -> None:
    """Refuse a table the record cannot follow: a malformed or repeated name, a group split in two, or a name
    that is both a field and a group."""
    names = [field.name for field in fields]
    if len(set(names)) != len(names):
        raise ValueError(f"a record field is named twice: {names}")
    groups_seen: list[str] = []
    for name in names:
        if not _FIELD_NAME.match(name):
            raise ValueError(f"record field {name!r}: lower-case words, at most one dot")
        group = name.partition(".")[0] if "." in name else ""
        if group in names:
            raise ValueError(f"record field {group!r} is also a group")
        if not groups_seen or groups_seen[-1] != group:
            if group in groups_seen:
                raise ValueError(f"record field {name!r}: the fields of a group must stay together")
            groups_seen.append(group)


_check_layout(APPLICATION_FIELDS)


def record_text(slots: Sequence[str], fields: Sequence[RecordField] = APPLICATION_FIELDS) -> str:
    """`{"id":<slot>,"applicant_id":<slot>,"personal":{…},…}`: the nested record, one slot per field in table order."""
    parts = ["{"]
    open_group = ""
    for position, (field, slot) in enumerate(zip(fields, slots, strict=True)):
        group, _, key = field.name.rpartition(".")
        if group != open_group:
            parts.append(("}," if open_group else "," if position else "") + (f'"{group}":{{' if group else ""))
            open_group = group
        elif position:
            parts.append(",")
        parts.append(f'"{key}":{slot}')
    parts.append("}}" if open_group else "}")
    return "".join(parts)


def _record_builders(fields: Sequence[RecordField]) -> tuple[Callable[[Any], dict], Callable[[Any], dict],
                                                              Callable[[Any], tuple]]:
    """`(application_record, application_page_record, record_values)` for the table, generated as source at import."""
    width = len(fields)
    names = [f"v{position}" for position in range(width)]
    namespace: dict[str, Any] = {}

    def converted(conversion, position: int, prefix: str) -> str:
        if conversion is None:
            return names[position]
        namespace[f"{prefix}{position}"] = conversion
        return f"{prefix}{position}({names[position]})"

    json_values = [converted(field.kind.to_json, position, "json_") for position, field in enumerate(fields)]
    page_values = [names[position] if field.kind is TIMESTAMP else json_values[position]
                   for position, field in enumerate(fields)]
    csv_values = [converted(field.kind.to_csv, position, "csv_") for position, field in enumerate(fields)]
    unpack = f"    ({', '.join(names)},) = row[:{width}]\n"
    source = (f"def application_record(row):\n{unpack}    return {record_text(json_values, fields)}\n\n"
              f"def application_page_record(row):\n{unpack}    return {record_text(page_values, fields)}\n\n"
              f"def record_values(row):\n{unpack}    return ({', '.join(csv_values)},)\n")
    exec(compile(source, f"<record builders of {__name__}>", "exec"), namespace)
    builders = namespace["application_record"], namespace["application_page_record"], namespace["record_values"]
    for builder in builders:
        builder.__module__ = __name__
    return builders


application_record, application_page_record, record_values = _record_builders(APPLICATION_FIELDS)
application_record.__doc__ = """The nested record of a row of `application_select` (extra columns after the record's are
ignored)."""
application_page_record.__doc__ = """`application_record` with its timestamps left as the naive-UTC datetimes
selected, for a JSON writer that formats them as `isoformat_z` does (`api.json_provider`'s `utc_response`): a page's
hundred timestamps are then written by orjson's C code, and its records cost half as much to build."""
record_values.__doc__ = """The flat record in RECORD_COLUMNS order, for CSV. The amount stays a Decimal (`50000.00`)."""


def application_select(scope: InstitutionScope) -> Select:
    """The institution's applications with every column a record needs (in APPLICATION_FIELDS order), in one query."""
    return (
        scope.select(Application, *(field.column for field in APPLICATION_FIELDS))
        .select_from(Application)
        .join(Applicant, Applicant.id == Application.applicant_id)
        .join(Program, Program.id == Application.program_id)
        .join(Cycle, Cycle.id == Application.cycle_id)
    )


def cycle_status(cycle: Cycle, now: datetime) -> str:
    if now < cycle.opens_at:
        return "upcoming"
    if now < cycle.closes_at:
        return "open"
    return "closed"


def cycle_record(cycle: Cycle, now: datetime) -> dict:
    return {
        "id": cycle.id,
        "name": cycle.name,
        "opens_at": isoformat_z(cycle.opens_at),
        "closes_at": isoformat_z(cycle.closes_at),
        "status": cycle_status(cycle, now),
        "programs": [{"id": program.id, "name": program.name} for program in cycle.programs],
    }


def cycle_values(record: dict) -> tuple:
    """The flat cycle record in CYCLE_COLUMNS order: program ids and names joined by CYCLE_LIST_SEPARATOR."""
    return (
        record["id"],
        record["name"],
        record["opens_at"],
        record["closes_at"],
        record["status"],
        CYCLE_LIST_SEPARATOR.join(program["id"] for program in record["programs"]),
        CYCLE_LIST_SEPARATOR.join(program["name"] for program in record["programs"]),
    )
