"""Aggregates for the staff portal: the dashboard of a cycle and the cycle list with counts."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from core.applications.counters import cycle_counts, per_cycle_and_program, per_day
from core.db import db
from core.institutions import pipeline, stage_label
from core.models import Cycle, Program, cycle_programs, utcnow
from core.models.admissions import DECISIONS
from core.scoping import InstitutionScope
from core.vocabulary import words


@dataclass(frozen=True)
class Count:
    key: str
    label: str
    count: int


@dataclass(frozen=True)
class Dashboard:
    cycle: Cycle | None
    total: int
    paid: int
    enrolled: int
    by_stage: list[Count]
    by_decision: list[Count]
    per_day: dict[date, int]
    first_day: date | None
    last_day: date | None

    @property
    def paid_share(self) -> float:
        return self.paid / self.total if self.total else 0.0

    @property
    def enrolled_share(self) -> float:
        return self.enrolled / self.total if self.total else 0.0


@dataclass(frozen=True)
class CycleSummary:
    cycle: Cycle
    status: str
    applications: int
    paid: int
    enrolled: int
    programs: list[tuple[Program, int]]


def cycle_status(cycle: Cycle, now: datetime) -> str:
    if now < cycle.opens_at:
        return "upcoming"
    return "open" if now < cycle.closes_at else "closed"


def cycles(scope: InstitutionScope) -> list[Cycle]:
    """The institution's cycles, newest opening first."""
    return list(db.session.scalars(scope.select(Cycle).order_by(Cycle.opens_at.desc(), Cycle.id)))


def current_cycle(scope: InstitutionScope) -> Cycle | None:
    """The open cycle that opened last; else the latest one that has opened; else the next to open."""
    now = utcnow()
    every = cycles(scope)
    for cycle in every:
        if cycle_status(cycle, now) == "open":
            return cycle
    opened = [cycle for cycle in every if cycle.opens_at <= now]
    if opened:
        return opened[0]
    return every[-1] if every else None


def programs(scope: InstitutionScope) -> list[Program]:
    return list(db.session.scalars(scope.select(Program).order_by(Program.name)))


def dashboard(scope: InstitutionScope, cycle: Cycle | None) -> Dashboard:
    """Counts per stage and decision, paid and enrolled totals and applications per day of one cycle.

    Read from the counters (core.applications.counters), so the cost does not grow with the number of applications.
    """
    if cycle is None:
        return Dashboard(None, 0, 0, 0, [], [], {}, None, None)
    counts = cycle_counts(scope, cycle.id)
    stage_counts = dict(counts.by_stage)
    stages = pipeline(scope)
    by_stage = [Count(stage.key, stage_label(stage), stage_counts.pop(stage.key, 0)) for stage in stages]
    by_stage += [Count(key, words("stage", key), count) for key, count in sorted(stage_counts.items())]
    by_decision = [Count(value, words("decision", value), counts.by_decision.get(value, 0)) for value in DECISIONS]
    days = per_day(scope, cycle.id)
    now = utcnow()
    first_day = cycle.opens_at.date()
    last_day = min(cycle.closes_at, max(now, cycle.opens_at)).date()
    if days:
        first_day = min(first_day, min(days))
        last_day = max(last_day, max(days))
    return Dashboard(cycle, counts.total, counts.paid, counts.enrolled, by_stage, by_decision, days,
                     first_day, last_day)


def cycle_summaries(scope: InstitutionScope) -> list[CycleSummary]:
    """Every cycle with its application, paid and enrolled counts and its programs' application counts."""
    now = utcnow()
    every = cycles(scope)
    per_program = per_cycle_and_program(scope)
    totals: dict[str, tuple[int, int, int]] = {}
    for (cycle_id, _), (count, paid, enrolled) in per_program.items():
        before = totals.get(cycle_id, (0, 0, 0))
        totals[cycle_id] = (before[0] + count, before[1] + paid, before[2] + enrolled)
    offered = {}
    for cycle_id, program in db.session.execute(
            scope.select(Program, cycle_programs.c.cycle_id, Program)
            .join(Program, Program.id == cycle_programs.c.program_id).order_by(Program.name)):
        offered.setdefault(cycle_id, []).append(program)
    summaries = []
    for cycle in every:
        count, paid, enrolled = totals.get(cycle.id, (0, 0, 0))
        summaries.append(CycleSummary(
            cycle=cycle, status=cycle_status(cycle, now), applications=count, paid=paid, enrolled=enrolled,
            programs=[(program, per_program.get((cycle.id, program.id), (0,))[0])
                      for program in offered.get(cycle.id, [])],
        ))
    return summaries
