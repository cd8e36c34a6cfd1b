"""The drain of an outbox: claim due rows, send them outside any transaction, record each outcome; one `Drain`
for every kind, each an `OutboxKind`."""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import bindparam, select, update
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from core.config import settings
from core.db import db
from core.metrics import OUTBOX_DEFERRED, OUTBOX_ROW_FAILURES
from core.outbox.circuit import DEFER, PROBE, Deferred, circuits, probe_interval
from core.outbox.leases import Outbox, lease, without_waiting_for_disk

log = logging.getLogger(__name__)

# While some threads are busy and nothing was due, a drain looks for newly due rows this often.
POLL_SECONDS = 0.25

# What an answer means (`OutboxKind.answer`).
SUCCEEDED, TEMPORARY, PERMANENT = "succeeded", "temporary", "permanent"


class Claimed(Protocol):
    id: str  # the row's id
    number: int  # the attempt it is about to get (1-based)


# The longest reason a failed row records (`Failed.reason`).
REASON_CHARACTERS = 500


@dataclass(frozen=True)
class Failed:
    """The engine's outcome for a row whose `step` ("load", "send" or "record") raised: a failed attempt of that row
    alone, retried on the schedule, with `reason` shown to staff."""
    step: str
    reason: str

    @classmethod
    def of(cls, step: str, error: BaseException) -> Failed:
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
        reason = f"Karibu could not {_STEP_VERBS[step]} this row: {type(error).__name__}"
        reason += f": {text}" if text else ""
        return cls(step, reason[:REASON_CHARACTERS])


_STEP_VERBS = {"load": "prepare", "send": "send", "record": "record the attempt of"}


# (claimed row, when it was attempted, outcome); outcome None: not attempted, its lease is released; a
# `Deferred` outcome: its transport was down, the row waits for the next probe with its attempts untouched; a
# `Failed` outcome: the engine's record of a row whose load, send or record raised. The row is the kind's claimed
# row, or its id (a `str`) when its load raised.
Sent = tuple[Any, datetime, Any]


@dataclass(frozen=True)
class AttemptReport:
    id: str
    status: str  # the row's status after the attempt
    outcome: Any


@dataclass(frozen=True)
class DrainResult:
    attempts: list[AttemptReport]
    more_due: bool  # the time budget ran out before the due rows did


class OutboxKind(Protocol):
    """One kind of outbox as one drain sees it (a new instance per drain). Optional capabilities: `Circuits`,
    `Shares`, `Records` and the settings of `Drain` (`poll_seconds`, `claim_at_least`, `lease_needed`)."""

    outbox: Outbox  # the table, its statuses, lease, retry schedule and clock

    def load(self, ids: list[str], lease_expires: datetime) -> list[Claimed]:
        """What the claimed rows need to be sent, oldest first (in the turn's transaction)."""

    def send(self, row: Claimed) -> tuple[datetime, Any]:
        """Send one row in a sender thread, touching no database session: (attempted at, outcome), the outcome
        None when it was not attempted after all (its lease is released)."""

    def answer(self, row: Claimed, outcome: Any, now: datetime) -> tuple[str, dict]:
        """What an outcome means (SUCCEEDED, TEMPORARY or PERMANENT) and the kind's own columns to record."""


class Circuits(Protocol):
    """Optional, all or none: the transport a row goes through can be down for every row (core/outbox/circuit.py);
    such outcomes are not attempts of the row. Without it, no circuit."""

    def circuit_of(self, row: Claimed) -> str | None:
        """The key of the row's transport (e.g. "smtp host:port"); None: no circuit."""

    def transport_failure(self, outcome: Any) -> str | None:
        """Why the transport is down when the outcome says nothing about the row itself; else None."""

    def deferred_columns(self, deferred: Deferred) -> dict:
        """The kind's own columns to record on a row put back until the next probe."""


class Shares(Protocol):
    """Optional, all or none: rows are sent in shares per group (e.g. per recipient), some held back for a while.
    Without it, one group, due rows leased oldest first, none held."""

    def group_of(self, row: Claimed) -> Hashable:
        """The group a row counts in (`Drain.in_flight`)."""

    def lease_due(self, drain: Drain, now: datetime, limit: int) -> tuple[list[str], bool]:
        """Lease up to `limit` due rows under `drain.token` (in the turn's transaction): (their ids, whether due rows
        were passed over because their group's share is taken, so the drain claims again when a row finishes)."""

    def may_start(self, drain: Drain, row: Claimed) -> bool:
        """Whether a newly claimed row may be sent now; if not, it is held until `resumable` offers it again."""

    def resumable(self, drain: Drain) -> list[Claimed]:
        """Held rows (`drain.held`) to check again with `still_ours` and start in this turn."""

    def still_ours(self, drain: Drain, rows: list[Claimed]) -> set[str]:
        """Ids of those still to be sent by this drain (at least: still leased under `drain.token`)."""


class Records(Protocol):
    """Optional, each method on its own: what a kind records beyond its rows' columns."""

    def record(self, attempts: list[Sent], statuses: dict[str, str]) -> None:
        """In the turn's transaction, after the attempted rows moved on (`statuses`: each one's new status, which
        this may change for the report); only the kind's own outcomes."""

    def found_down(self, rows: list[Claimed]) -> None:
        """In the turn's transaction: rows whose attempt opened their circuit or was a failed probe."""

    def failed(self, failures: list[Sent], statuses: dict[str, str]) -> None:
        """In the turn's transaction: rows recorded as `Failed` (their row, or only their id when the load raised)."""

    def failed_columns(self, failed: Failed) -> dict:
        """The kind's own columns to record on a `Failed` row (e.g. its last error)."""

    def committed(self, finished: list[Sent], statuses: dict[str, str]) -> None:
        """After the turn that recorded `finished` (attempts, deferrals, releases, and `Failed` sends and records)
        committed."""


class _NoCircuits:
    """The engine's stand-in for a kind without `Circuits`."""

    def circuit_of(self, row: Claimed) -> None:
        return None

    def transport_failure(self, outcome: Any) -> None:
        return None

    def deferred_columns(self, deferred: Deferred) -> dict:
        return {}


class _OneShare:
    """The engine's stand-in for a kind without `Shares`."""

    def group_of(self, row: Claimed) -> None:
        return None

    def lease_due(self, drain: Drain, now: datetime, limit: int) -> tuple[list[str], bool]:
        return lease(drain.outbox, now, limit, drain.token), False

    def may_start(self, drain: Drain, row: Claimed) -> bool:
        return True

    def resumable(self, drain: Drain) -> list[Claimed]:
        return list(drain.held)

    def still_ours(self, drain: Drain, rows: list[Claimed]) -> set[str]:
        model = drain.outbox.model
        return set(db.session.scalars(
            select(model.id).where(model.id.in_([row.id for row in rows]), model.lease_token == drain.token)))


def _capability(kind: OutboxKind, capability: type, stand_in: object) -> Any:
    """`kind` when it has every method of `capability`, `stand_in` when it has none."""
    names = [name for name, value in vars(capability).items() if callable(value) and not name.startswith("_")]
    found = [name for name in names if hasattr(kind, name)]
    if found and len(found) < len(names):
        raise TypeError(f"{type(kind).__name__} has part of {capability.__name__}: "
                        f"{sorted(set(names) - set(found))} missing")
    return kind if found else stand_in


def _id_of(row: Any) -> str:
    return row if isinstance(row, str) else row.id


def _database_fault(error: BaseException) -> bool:
    """Whether `error` is the database's (gone, locked, cut), not one row's: then the whole turn fails."""
    return isinstance(error, (OperationalError, InterfaceError)) or (
        isinstance(error, DBAPIError) and error.connection_invalidated)


class Drain:
    """One drain: keeps every sender thread busy with `kind`'s oldest due rows until the time budget is spent, or,
    with `stop` (a lane), for as long as rows are due, until `stop` is set.

    `capacity`: claimed rows held at most (being sent and queued behind them). `on_backlog`: called when a claim
    finds as many due rows as it asked for, once per time budget. `lease_expires`: when the earliest lease held lapses
    unless renewed.
    """

    def __init__(self, kind: OutboxKind, senders: Executor, capacity: int,
                 on_backlog: Callable[[], None] | None = None):
        self.kind = kind
        self.outbox = kind.outbox
        self.circuits: Circuits = _capability(kind, Circuits, _NoCircuits())
        self.shares: Shares = _capability(kind, Shares, _OneShare())
        self.poll_seconds: float = getattr(kind, "poll_seconds", POLL_SECONDS)
        # a busy drain claims only once this many rows can be claimed (1: as soon as a row finishes)
        self.claim_at_least: int = getattr(kind, "claim_at_least", 1)
        # a send starts only with this much of its lease left (None: any)
        self.lease_needed: timedelta | None = getattr(kind, "lease_needed", None)
        self.senders = senders
        self.capacity = capacity
        self.on_backlog = on_backlog
        self._backlog_call = on_backlog
        self.token = secrets.token_hex(8)  # the lease of every row this drain claims
        self.finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self.sending: dict[Future, Claimed] = {}  # submitted to the senders, not collected yet
        self.in_flight: dict[Hashable, int] = {}  # per group (`Shares.group_of`)
        self.held: list = []  # claimed, not started yet (`Shares.may_start` said no)
        self.passed_over = False  # the last claim left due rows aside on purpose (`Shares.lease_due`)
        self.reports: list[AttemptReport] = []
        self._keep_reports = True
        config = settings()
        self.probe_seconds = (config.OUTBOX_PROBE_MIN_SECONDS, config.OUTBOX_PROBE_MAX_SECONDS)
        self.mine: set[str] = set()  # ids leased and not recorded yet (their leases are renewed)
        self.lease_expires: datetime | None = None

    # --- the engine ---------------------------------------------------------------------------------------

    @property
    def busy(self) -> int:
        return sum(self.in_flight.values())

    def run(self, time_budget: float, stop: threading.Event | None = None, *, endless: bool = False) -> DrainResult:
        """Drain until the time budget is spent (claiming stops, what was sent is recorded), or `stop` is set (the
        rows not started yet are released, those in flight finish). `endless` (a lane's drain): the budget only
        re-arms `on_backlog`, and claiming goes on until nothing is due and nothing is in flight."""
        try:
            return self._run(time_budget, stop, endless)
        except BaseException:
            self._cancel_unstarted()  # nothing is sent that could not be recorded
            raise

    def _run(self, time_budget: float, stop: threading.Event | None, endless: bool) -> DrainResult:
        self._keep_reports = not endless  # an endless drain may run for hours: it keeps no report
        started = period_started = time.monotonic()
        nothing_due_since: float | None = None  # when a claim last found fewer due rows than it asked
        done: list[Sent] = []
        stopping = False
        while True:
            if stop is not None and stop.is_set() and not stopping:
                stopping = True
                done = done + self._let_go()
            if endless and time.monotonic() - period_started >= time_budget:
                period_started, self.on_backlog = time.monotonic(), self._backlog_call
            claiming = not stopping and (endless or time.monotonic() - started < time_budget)
            free = self.capacity - self.busy - len(self.held) if claiming else 0
            if nothing_due_since is not None and time.monotonic() - nothing_due_since < self.poll_seconds:
                free = 0  # nothing was due a moment ago: look again only after a short pause
            if 0 < free < self.claim_at_least and self.busy:
                free = 0  # claim in small groups, not one row per finished attempt
            resumed, claimed, leased = self._turn(done, free)
            if free > 0:
                if leased < free and not self.passed_over:
                    nothing_due_since = time.monotonic()
                else:
                    nothing_due_since = None
                    if leased >= free:
                        self._wake_another()
            for row in resumed:
                self._start(row)
            for row in claimed:
                if self.shares.may_start(self, row):
                    self._start(row)
                else:
                    self.held.append(row)
            if not self.busy and not self.held:
                if nothing_due_since is not None or not claiming:
                    return DrainResult(self.reports, more_due=not claiming and nothing_due_since is None)
                done = []
                continue
            if not self.busy:
                done = []  # only held rows are left: check them again at once
                continue
            # while claiming, wake up now and then to fill free threads with rows that came due; always in time
            # to renew the leases
            done = self._collect(timeout=self.poll_seconds if claiming else self.outbox.lease.total_seconds() / 20)

    def _let_go(self) -> list[Sent]:
        """Stopping: the rows not started yet (held, or queued for a sender) are released in the next turn."""
        self._cancel_unstarted()
        now = self.outbox.now()
        released = [(row, now, None) for row in self.held]
        self.held = []
        return released

    def _cancel_unstarted(self) -> None:
        """Cancel the sends still queued for a sender (their rows come back through `finished` as not attempted)."""
        for future in list(self.sending):
            future.cancel()

    def _turn(self, done: list[Sent], free: int) -> tuple[list[Claimed], list[Claimed], int]:
        """One transaction: record the finished attempts, check the held rows that may go now, renew the leases
        when a fifth of the lease has passed, claim up to `free` due rows. Returns (held rows to start, newly
        claimed ones, how many were leased). A row whose load or record raises is recorded as `Failed`, alone."""
        now = self.outbox.now()
        renew = bool(self.mine) and now >= self.lease_expires - self.outbox.lease * 4 / 5
        if not done and free <= 0 and not self.held and not renew:
            return [], [], 0
        without_waiting_for_disk()
        attempts = [sent for sent in done if not isinstance(sent[2], Deferred)]
        deferred = [sent for sent in done if isinstance(sent[2], Deferred)]
        statuses, failures = self._record_each(attempts) if attempts else ({}, [])
        if deferred:
            self._defer(deferred)
            if hasattr(self.kind, "found_down"):
                self.kind.found_down([row for row, _, outcome in deferred if outcome.found_down])
        self.mine.difference_update(_id_of(row) for row, _, _ in done)
        ready = self.shares.resumable(self)
        ours = self.shares.still_ours(self, ready) if ready else set()
        if renew:
            self._renew(now)
        ids, self.passed_over = self.shares.lease_due(self, now, free) if free > 0 else ([], False)
        claimed, unloaded = self._load(ids, now + self.outbox.lease) if ids else ([], [])
        if unloaded:
            statuses.update(self._fail(unloaded))
        db.session.commit()
        failures += unloaded
        if claimed and not self.mine:
            self.lease_expires = now + self.outbox.lease
        # the rows the kind loaded are ours to send; those it left out it settled itself (e.g. skipped)
        self.mine.update(row.id for row in claimed)
        for _, _, failed in failures:
            OUTBOX_ROW_FAILURES.labels(self.outbox.model.__tablename__, failed.step).inc()
        if hasattr(self.kind, "committed"):
            self.kind.committed(done, statuses)
        if self._keep_reports:
            self.reports.extend(AttemptReport(_id_of(row), statuses[_id_of(row)], outcome)
                                for row, _, outcome in attempts + unloaded if outcome is not None)
        # held rows no longer ours (lease lapsed, or the kind's own reason) are dropped
        rechecked = {row.id for row in ready}
        self.held = [row for row in self.held if row.id not in rechecked]
        self.mine.difference_update(rechecked - ours)
        return [row for row in ready if row.id in ours], claimed, len(ids)

    def _record_each(self, attempts: list[Sent]) -> tuple[dict[str, str], list[Sent]]:
        """Record `attempts` (the first step of the turn's transaction); when that raises, start the transaction
        again and record each row on its own, those that raise again as `Failed`. Returns (the new statuses, the
        rows recorded as `Failed`)."""
        try:
            return self._record_some(attempts)
        except Exception as error:
            if _database_fault(error):
                raise
            db.session.rollback()
            log.warning("recording %d %s raised (%s: %s); recording each on its own", len(attempts),
                        self.outbox.model.__tablename__, type(error).__name__, error)
        without_waiting_for_disk()
        statuses: dict[str, str] = {}
        failed: list[Sent] = [sent for sent in attempts if isinstance(sent[2], Failed)]
        for sent in attempts:
            if isinstance(sent[2], Failed):
                continue
            try:
                with db.session.begin_nested():
                    recorded, _ = self._record_some([sent])
            except Exception as error:
                if _database_fault(error):
                    raise
                log.exception("recording %s %s raised: recorded as a failed attempt", self.outbox.model.__tablename__,
                          _id_of(sent[0]))
                failed.append((sent[0], sent[1], Failed.of("record", error)))
                continue
            statuses.update(recorded)
        statuses.update(self._fail(failed))
        return statuses, failed

    def _record_some(self, attempts: list[Sent]) -> tuple[dict[str, str], list[Sent]]:
        """Record `attempts` in the turn's transaction: the kind's outcomes, then the `Failed` ones."""
        failed = [sent for sent in attempts if isinstance(sent[2], Failed)]
        answered = [sent for sent in attempts if not isinstance(sent[2], Failed)]
        statuses = self._record(answered) if answered else {}
        sent_rows = [sent for sent in answered if sent[2] is not None]
        if sent_rows and hasattr(self.kind, "record"):
            self.kind.record(sent_rows, statuses)
        if failed:
            statuses.update(self._fail(failed))
        return statuses, failed

    def _load(self, ids: list[str], lease_expires: datetime) -> tuple[list[Claimed], list[Sent]]:
        """The kind's load of the claimed rows; when it raises, each row is loaded on its own and those that raise
        again are `Failed` (returned as (id, now, Failed), to be recorded in this turn)."""
        try:
            with db.session.begin_nested():
                return self.kind.load(ids, lease_expires), []
        except Exception as error:
            if _database_fault(error):
                raise
        loaded: list[Claimed] = []
        unloaded: list[Sent] = []
        for row_id in ids:
            try:
                with db.session.begin_nested():
                    loaded.extend(self.kind.load([row_id], lease_expires))
            except Exception as error:
                if _database_fault(error):
                    raise
                log.exception("loading %s %s raised: recorded as a failed attempt", self.outbox.model.__tablename__,
                          row_id)
                unloaded.append((row_id, self.outbox.now(), Failed.of("load", error)))
        return loaded, unloaded

    def _fail(self, failures: list[Sent]) -> dict[str, str]:
        """Record `Failed` rows (still under this drain's lease) as failed attempts on the retry schedule, with the
        kind's columns and records when they can be written (else the engine's alone). Returns the new statuses."""
        outbox, now = self.outbox, self.outbox.now()
        model = outbox.model
        table = model.__table__
        numbers = dict(db.session.execute(
            select(model.id, model.attempts)
            .where(model.id.in_([_id_of(row) for row, _, _ in failures]), model.lease_token == self.token)).all())
        rows, statuses = [], {}
        for row, attempted_at, failed in failures:
            row_id = _id_of(row)
            if row_id not in numbers:
                continue  # no longer ours
            number = numbers[row_id] + 1
            following = outbox.schedule.next_attempt_at(number, attempted_at)
            statuses[row_id] = outbox.retry if following is not None else outbox.given_up
            rows.append({"b_id": row_id, "b_token": self.token, "status": statuses[row_id], "attempts": number,
                         "next_attempt_at": following, "lease_token": None, "lease_expires_at": None,
                         "updated_at": now, "_failed": failed})
        if not rows:
            return statuses

        def write(with_kind: bool) -> None:
            for columns in {tuple(sorted(self._failed_columns(row, with_kind))) for row in rows}:
                group = [self._failed_columns(row, with_kind) for row in rows]
                group = [values for values in group if tuple(sorted(values)) == columns]
                db.session.connection().execute(
                    update(table).where(table.c.id == bindparam("b_id"), table.c.lease_token == bindparam("b_token"))
                    .values({name: bindparam(name) for name in columns if not name.startswith("b_")}),
                    group,
                )
            if with_kind and hasattr(self.kind, "failed"):
                self.kind.failed([sent for sent in failures if _id_of(sent[0]) in statuses], statuses)

        try:
            with db.session.begin_nested():
                write(with_kind=True)
        except Exception as error:
            if _database_fault(error):
                raise
            log.exception("the kind's record of failed %s raised; only their status is recorded",
                      self.outbox.model.__tablename__)
            write(with_kind=False)
        return statuses

    def _failed_columns(self, row: dict, with_kind: bool) -> dict:
        values = {name: value for name, value in row.items() if name != "_failed"}
        if with_kind and hasattr(self.kind, "failed_columns"):
            values.update(self.kind.failed_columns(row["_failed"]))
        return values

    def _renew(self, now: datetime) -> None:
        """Push back the lease of every row this drain holds (in the turn's transaction)."""
        model = self.outbox.model
        db.session.execute(update(model).where(model.id.in_(self.mine), model.lease_token == self.token)
                           .values(lease_expires_at=now + self.outbox.lease))
        self.lease_expires = now + self.outbox.lease

    def _defer(self, deferred: list[Sent]) -> None:
        """Put back rows whose transport was down: due at the next probe, their attempts untouched."""
        table = self.outbox.model.__table__
        now = self.outbox.now()
        rows = [{"b_id": row.id, "b_token": self.token, "status": self.outbox.retry,
                 "next_attempt_at": outcome.until, **self.circuits.deferred_columns(outcome), "lease_token": None,
                 "lease_expires_at": None, "updated_at": now} for row, _, outcome in deferred]
        for row, _, _ in deferred:
            key = self.circuits.circuit_of(row)
            OUTBOX_DEFERRED.labels(key.split(" ", 1)[0] if key else "none").inc()
        for columns in {tuple(sorted(row)) for row in rows}:  # one statement per set of columns
            group = [row for row in rows if tuple(sorted(row)) == columns]
            db.session.connection().execute(
                update(table).where(table.c.id == bindparam("b_id"), table.c.lease_token == bindparam("b_token"))
                .values({name: bindparam(name) for name in columns if not name.startswith("b_")}),
                group,
            )

    def _record(self, done: list[Sent]) -> dict[str, str]:
        """Record finished attempts in the turn's transaction: each attempted row moves on by its answer and the
        retry schedule, still under this drain's lease; rows not attempted are released. Returns the new statuses."""
        outbox, now = self.outbox, self.outbox.now()
        table = outbox.model.__table__
        statuses: dict[str, str] = {}
        rows, unsent = [], []
        for row, attempted_at, outcome in done:
            if outcome is None:
                unsent.append(row.id)
                continue
            verdict, columns = self.kind.answer(row, outcome, now)
            following = None
            if verdict == SUCCEEDED:
                status = outbox.succeeded
            elif verdict == PERMANENT:
                status = outbox.given_up
            else:
                following = outbox.schedule.next_attempt_at(row.number, attempted_at)
                status = outbox.retry if following is not None else outbox.given_up
            statuses[row.id] = status
            rows.append({
                "b_id": row.id, "b_token": self.token, "status": status, "attempts": row.number,
                "next_attempt_at": following, **columns, "lease_token": None, "lease_expires_at": None,
                "updated_at": now,
            })
        connection = db.session.connection()
        for columns in {tuple(sorted(row)) for row in rows}:  # one statement per set of columns
            connection.execute(
                update(table).where(table.c.id == bindparam("b_id"), table.c.lease_token == bindparam("b_token"))
                .values({name: bindparam(name) for name in columns if not name.startswith("b_")}),
                [row for row in rows if tuple(sorted(row)) == columns],
            )
        if unsent:
            connection.execute(update(table).where(table.c.id.in_(unsent), table.c.lease_token == self.token)
                               .values(lease_token=None, lease_expires_at=None))
        return statuses

    def _start(self, row: Claimed) -> None:
        group = self.shares.group_of(row)
        self.in_flight[group] = self.in_flight.get(group, 0) + 1
        future = self.senders.submit(self._send, row)
        self.sending[future] = row
        future.add_done_callback(self.finished.put)

    def _send(self, row: Claimed) -> Sent:
        """Send one row unless its transport is down (then it is deferred to the next probe); whatever raises is
        this row's `Failed` outcome alone."""
        try:
            return self._send_through_circuit(row)
        except Exception as error:
            log.exception("sending %s %s raised: recorded as a failed attempt", self.outbox.model.__tablename__, row.id)
            return row, self.outbox.now(), Failed.of("send", error)

    def _send_through_circuit(self, row: Claimed) -> Sent:
        key = self.circuits.circuit_of(row)
        if key is None:
            return (row, *self._attempt(row))
        circuit = circuits.of(key)
        admitted, until, began_in = circuit.admit(self.outbox.now)
        if admitted == DEFER:
            return row, self.outbox.now(), Deferred(until, circuit.error)
        try:
            attempted_at, outcome = self._attempt(row)
            error = None if outcome is None else self.circuits.transport_failure(outcome)
            if error is not None:
                until, found_down = circuit.down(self.outbox.now(), error, probe_interval(*self.probe_seconds),
                                                 began_in)
                return row, attempted_at, Deferred(until, error, found_down)
            if outcome is not None:
                circuit.answered(began_in)
            return row, attempted_at, outcome
        finally:
            if admitted == PROBE:
                circuit.probe_ended(began_in)

    def _attempt(self, row: Claimed) -> tuple[datetime, Any]:
        """The kind's send, unless the lease could lapse before it ends (`lease_needed`): then not started."""
        if self.lease_needed is not None:
            now = self.outbox.now()
            if self.lease_expires - now < self.lease_needed:
                return now, None
        return self.kind.send(row)

    def _collect(self, timeout: float | None) -> list[Sent]:
        """Wait for one attempt to finish (or the poll timeout), then take every other finished one."""
        futures = []
        try:
            futures.append(self.finished.get(timeout=timeout))
            while True:
                futures.append(self.finished.get_nowait())
        except queue.Empty:
            pass
        done = []
        for future in futures:
            row = self.sending.pop(future)
            # never started (cancelled: the drain is stopping): released; `_send` itself never raises
            done.append((row, self.outbox.now(), None) if future.cancelled() else future.result())
            group = self.shares.group_of(row)
            self.in_flight[group] -= 1
            if not self.in_flight[group]:
                del self.in_flight[group]
        return done

    def _wake_another(self) -> None:
        """A claim found as many due rows as it asked for: a backlog, so another worker may help."""
        if self.on_backlog is not None:
            self.on_backlog()
            self.on_backlog = None  # once per time budget; the drain it wakes wakes the next one
