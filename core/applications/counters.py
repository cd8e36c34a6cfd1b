"""Constant-time application counts read from the trigger-maintained counters (core/models/counts.py)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Mapping

from sqlalchemy import Date, cast, func, select
from sqlalchemy.exc import OperationalError

from core.db import db
from core.models import Application
from core.models.counts import ApplicationCount, ApplicationDayCount
from core.scoping import InstitutionScope

COUNTED_COLUMNS = ("cycle_id", "program_id", "stage", "decision", "paid", "enrolled")
# List filters that are counted dimensions (cycle and program arrive as resolved id lists).
DIMENSION_FILTERS = {"cycle_ids": "cycle_id", "program_ids": "program_id", "stage": "stage",
                     "decision": "decision", "paid": "paid", "enrolled": "enrolled"}


@dataclass(frozen=True)
class CycleCounts:
    total: int
    paid: int
    enrolled: int
    by_stage: dict[str, int]
    by_decision: dict[str, int]


def cycle_counts(scope: InstitutionScope, cycle_id: str) -> CycleCounts:
    """Total, paid, enrolled and per-stage and per-decision counts of one cycle."""
    rows = db.session.execute(
        scope.select(ApplicationCount, ApplicationCount.stage, ApplicationCount.decision, ApplicationCount.paid,
                     ApplicationCount.enrolled, func.sum(ApplicationCount.n))
        .where(ApplicationCount.cycle_id == cycle_id)
        .group_by(ApplicationCount.stage, ApplicationCount.decision, ApplicationCount.paid,
                  ApplicationCount.enrolled)).all()
    total = paid = enrolled = 0
    by_stage: dict[str, int] = {}
    by_decision: dict[str, int] = {}
    for stage, decision, is_paid, is_enrolled, count in rows:
        count = int(count)
        if not count:
            continue
        total += count
        paid += count if is_paid else 0
        enrolled += count if is_enrolled else 0
        by_stage[stage] = by_stage.get(stage, 0) + count
        by_decision[decision] = by_decision.get(decision, 0) + count
    return CycleCounts(total, paid, enrolled, by_stage, by_decision)


def per_cycle_and_program(scope: InstitutionScope) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(cycle id, program id) → (applications, paid, enrolled) for the whole institution."""
    counts: dict[tuple[str, str], tuple[int, int, int]] = {}
    for cycle_id, program_id, is_paid, is_enrolled, count in db.session.execute(
            scope.select(ApplicationCount, ApplicationCount.cycle_id, ApplicationCount.program_id,
                         ApplicationCount.paid, ApplicationCount.enrolled, func.sum(ApplicationCount.n))
            .group_by(ApplicationCount.cycle_id, ApplicationCount.program_id, ApplicationCount.paid,
                      ApplicationCount.enrolled)):
        total, paid, enrolled = counts.get((cycle_id, program_id), (0, 0, 0))
        count = int(count)
        counts[(cycle_id, program_id)] = (total + count, paid + (count if is_paid else 0),
                                          enrolled + (count if is_enrolled else 0))
    return counts


def per_day(scope: InstitutionScope, cycle_id: str) -> dict[date, int]:
    """Applications per day of submission in one cycle (days with none are left out)."""
    days = {}
    for day, count in db.session.execute(
            scope.select(ApplicationDayCount, ApplicationDayCount.day, func.sum(ApplicationDayCount.n))
            .where(ApplicationDayCount.cycle_id == cycle_id).group_by(ApplicationDayCount.day)):
        if int(count):
            days[day if isinstance(day, date) else date.fromisoformat(str(day))] = int(count)
    return days


def count_by_dimensions(scope: InstitutionScope, filters: Mapping[str, Any], connection=None) -> int | None:
    """The number of applications matching `filters` (DIMENSION_FILTERS keys) if all are counted, else None."""
    if any(name not in DIMENSION_FILTERS for name in filters):
        return None
    statement = scope.select(ApplicationCount, func.coalesce(func.sum(ApplicationCount.n), 0))
    for name, value in filters.items():
        column = getattr(ApplicationCount, DIMENSION_FILTERS[name])
        statement = statement.where(column.in_(value) if name.endswith("_ids") else column == value)
    return int((connection or db.session).scalar(statement))


def compact_counts() -> int:
    """Fold the delta rows into one row per combination; returns how many rows were folded away."""
    folded = 0
    with db.engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection = connection.execution_options(isolation_level="REPEATABLE READ")
        for model, columns in ((ApplicationCount, ("institution_id", *COUNTED_COLUMNS)),
                               (ApplicationDayCount, ("institution_id", "cycle_id", "day"))):
            try:
                with connection.begin():
                    folded += _fold(connection, model, columns)
            except (_RaceLost, OperationalError):
                continue  # another compaction folded these rows
    return folded


class _RaceLost(Exception):
    pass


def _fold(connection, model, columns: tuple[str, ...]) -> int:
    highest = connection.scalar(select(func.max(model.id)))
    if highest is None:
        return 0
    dimensions = [getattr(model, name) for name in columns]
    groups = connection.execute(
        select(*dimensions, func.sum(model.n), func.count()).where(model.id <= highest)
        .group_by(*dimensions)).all()
    seen = sum(group[-1] for group in groups)
    if seen == len(groups):
        return 0  # already one row per combination
    if connection.execute(model.__table__.delete().where(model.id <= highest)).rowcount != seen:
        raise _RaceLost
    kept = [dict(zip((*columns, "n"), group[:-1])) for group in groups if group[-2]]
    if kept:
        connection.execute(model.__table__.insert(), kept)
    return seen - len(kept)


@dataclass(frozen=True)
class Mismatch:
    table: str
    key: tuple
    counted: int
    actual: int


def verify_counts() -> list[Mismatch]:
    """Every counter against `COUNT(*)` of the applications table (all institutions); empty when exact."""
    mismatches: list[Mismatch] = []
    day = cast(Application.submitted_at, Date) if db.engine.dialect.name == "postgresql" \
        else func.date(Application.submitted_at)
    checks = (
        ("application_counts", ApplicationCount, ("institution_id", *COUNTED_COLUMNS),
         [Application.institution_id, *(getattr(Application, name) for name in COUNTED_COLUMNS)]),
        ("application_day_counts", ApplicationDayCount, ("institution_id", "cycle_id", "day"),
         [Application.institution_id, Application.cycle_id, day]),
    )
    for table, model, columns, actual_columns in checks:
        dimensions = [getattr(model, name) for name in columns]
        counted = {_key(row[:-1]): int(row[-1]) for row in db.session.execute(
            select(*dimensions, func.sum(model.n)).group_by(*dimensions))}
        actual = {_key(row[:-1]): int(row[-1]) for row in db.session.execute(
            select(*actual_columns, func.count()).group_by(*actual_columns))}
        for key in sorted(set(counted) | set(actual), key=repr):
            if counted.get(key, 0) != actual.get(key, 0):
                mismatches.append(Mismatch(table, key, counted.get(key, 0), actual.get(key, 0)))
    return mismatches


def _key(values) -> tuple:
    """Comparable keys across dialects (SQLite returns days as text and booleans as integers)."""
    return tuple(str(value) if isinstance(value, date) else (bool(value) if isinstance(value, bool | int)
                                                             and value in (0, 1) else value) for value in values)
