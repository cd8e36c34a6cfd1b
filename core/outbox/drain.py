"""The drain of an outbox: claim due rows, send them outside any transaction, record each outcome.

A drain is a pipeline, not a series of batches: each sender thread takes the next claimed row as soon as its
previous attempt finishes, so a slow recipient holds one thread, never the others. One transaction per turn of
the loop records what finished since the last turn and leases as many due rows as there is room for (both
committed without waiting for the disk), so each attempt is recorded a moment after it ends. The leases of the
rows a drain holds are renewed while it works (every fifth of the lease), so a lease can be short: a killed
worker's rows are free again within one lease. A kind of outbox subclasses `Drain` and says what a claimed row
is (`load`), how it is sent (`send`) and what an answer means (`answer`); it may hold some rows back for a while
(`may_start`, `resumable`, `still_ours`), and name the transport a row goes through (`circuit_of`) and which
outcomes say that transport is down (`transport_failure`): those are not attempts of the row
(core/outbox/circuit.py).
"""

from __future__ import annotations

import queue
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import bindparam, select, update

from core.config import settings
from core.db import db
from core.metrics import OUTBOX_DEFERRED
from core.outbox.circuit import DEFER, PROBE, Deferred, circuits, probe_interval
from core.outbox.leases import Outbox, lease, without_waiting_for_disk

# While some threads are busy and nothing was due, a drain looks for newly due rows this often.
POLL_SECONDS = 0.25

# What an answer means (`Drain.answer`).
SUCCEEDED, TEMPORARY, PERMANENT = "succeeded", "temporary", "permanent"


class Claimed(Protocol):
    id: str  # the row's id
    number: int  # the attempt it is about to get (1-based)


# (claimed row, when it was attempted, outcome); outcome None: not attempted, its lease is released; a
# `Deferred` outcome: its transport was down, the row waits for the next probe with its attempts untouched
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


class Drain(ABC):
    """One drain: keeps every sender thread busy with the oldest due rows until the time budget is spent.

    `capacity` is how many claimed rows it holds at most (those being sent and those queued behind them, so a
    thread that finishes starts the next one at once, without waiting for this thread's next database turn).
    `on_backlog` is called once when a claim finds as many due rows as it asked for. `lease_expires` is when
    the earliest lease this drain holds lapses unless renewed (a kind checks it before it starts a send).
    """

    # Set by a kind's `lease_due` when it left due rows aside on purpose (a recipient's share is taken): the
    # drain then claims again as soon as an attempt finishes instead of concluding that nothing is due.
    passed_over = False
    poll_seconds = POLL_SECONDS
    # A busy drain claims only once this many rows can be claimed (1: as soon as a row finishes).
    claim_at_least = 1

    def __init__(self, outbox: Outbox, senders: Executor, capacity: int,
                 on_backlog: Callable[[], None] | None = None):
        self.outbox = outbox
        self.senders = senders
        self.capacity = capacity
        self.on_backlog = on_backlog
        self.token = secrets.token_hex(8)  # the lease of every row this drain claims
        self.finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self.in_flight: dict[Hashable, int] = {}  # per group (`group_of`)
        self.held: list = []  # claimed, not started yet (`may_start` said no)
        self.reports: list[AttemptReport] = []
        config = settings()
        self.probe_seconds = (config.OUTBOX_PROBE_MIN_SECONDS, config.OUTBOX_PROBE_MAX_SECONDS)
        self.mine: set[str] = set()  # ids leased and not recorded yet (their leases are renewed)
        self.lease_expires: datetime | None = None

    # --- what a kind of outbox supplies ---------------------------------------------------------------------

    @abstractmethod
    def load(self, ids: list[str], lease_expires: datetime) -> list[Claimed]:
        """What the claimed rows need to be sent, oldest first (in the turn's transaction)."""

    @abstractmethod
    def send(self, row: Claimed) -> tuple[datetime, Any]:
        """Send one row; runs in a sender thread and touches no database session. Returns (attempted at,
        outcome), the outcome None when it was not attempted after all."""

    @abstractmethod
    def answer(self, row: Claimed, outcome: Any, now: datetime) -> tuple[str, dict]:
        """What an outcome means (SUCCEEDED, TEMPORARY or PERMANENT) and the kind's own columns to record."""

    def group_of(self, row: Claimed) -> Hashable:
        """Rows counted together in `in_flight` (e.g. per recipient)."""
        return None

    def may_start(self, row: Claimed) -> bool:
        """Whether a newly claimed row may be sent now; if not it is held until `resumable` offers it again."""
        return True

    def resumable(self) -> list[Claimed]:
        """Held rows to check again (`still_ours`) and start in this turn."""
        return list(self.held)

    def lease_due(self, now: datetime, limit: int) -> list[str]:
        """Lease up to `limit` due rows under this drain's token (in the turn's transaction), oldest first; a
        kind may pick them otherwise (e.g. fairly across recipients, setting `passed_over`)."""
        return lease(self.outbox, now, limit, self.token)

    def still_ours(self, rows: list[Claimed]) -> set[str]:
        """Ids of those whose lease this drain still holds."""
        model = self.outbox.model
        return set(db.session.scalars(
            select(model.id).where(model.id.in_([row.id for row in rows]), model.lease_token == self.token)))

    def committed(self, done: list[Sent], statuses: dict[str, str]) -> None:
        """After the turn that recorded the attempts `done` committed (metrics)."""

    def turn_committed(self, finished: list[Sent]) -> None:
        """After the turn that recorded `finished` (attempts, deferrals, releases) committed."""

    def circuit_of(self, row: Claimed) -> str | None:
        """The key of the transport the row goes through (core/outbox/circuit.py); None: no circuit."""
        return None

    def transport_failure(self, outcome: Any) -> str | None:
        """Why the transport is down when the outcome says nothing about the row itself; else None."""
        return None

    def deferred_columns(self, deferred: Deferred) -> dict:
        """The kind's own columns to record on a deferred row (e.g. the error staff see)."""
        return {}

    def found_down(self, rows: list[Claimed]) -> None:
        """In the turn's transaction, after the deferrals: rows whose attempt opened their circuit or was a
        failed probe (`Deferred.found_down`)."""

    # --- the engine ---------------------------------------------------------------------------------------

    @property
    def busy(self) -> int:
        return sum(self.in_flight.values())

    def run(self, time_budget: float) -> DrainResult:
        started = time.monotonic()
        nothing_due_since: float | None = None  # when a claim last found fewer due rows than it asked
        done: list[Sent] = []
        while True:
            claiming = time.monotonic() - started < time_budget
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
                if self.may_start(row):
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

    def _turn(self, done: list[Sent], free: int) -> tuple[list[Claimed], list[Claimed], int]:
        """One transaction: record the finished attempts, check the held rows that may go now, renew the leases
        when a fifth of the lease has passed, claim up to `free` due rows. Returns (held rows to start, newly
        claimed ones, how many were leased)."""
        now = self.outbox.now()
        renew = bool(self.mine) and now >= self.lease_expires - self.outbox.lease * 4 / 5
        if not done and free <= 0 and not self.held and not renew:
            return [], [], 0
        without_waiting_for_disk()
        attempts = [sent for sent in done if not isinstance(sent[2], Deferred)]
        deferred = [sent for sent in done if isinstance(sent[2], Deferred)]
        statuses = self.record(attempts) if attempts else {}
        if deferred:
            self._defer(deferred)
            self.found_down([row for row, _, outcome in deferred if outcome.found_down])
        self.mine.difference_update(row.id for row, _, _ in done)
        ready = self.resumable()
        ours = self.still_ours(ready) if ready else set()
        if renew:
            self._renew(now)
        ids = self.lease_due(now, free) if free > 0 else []
        claimed = self.load(ids, now + self.outbox.lease) if ids else []
        db.session.commit()
        if ids and not self.mine:
            self.lease_expires = now + self.outbox.lease
        self.mine.update(ids)
        self.turn_committed(done)
        self.committed(attempts, statuses)
        self.reports.extend(AttemptReport(row.id, statuses[row.id], outcome)
                            for row, _, outcome in attempts if outcome is not None)
        # held rows no longer ours (lease lapsed, or the kind's own reason) are dropped
        rechecked = {row.id for row in ready}
        self.held = [row for row in self.held if row.id not in rechecked]
        self.mine.difference_update(rechecked - ours)
        return [row for row in ready if row.id in ours], claimed, len(ids)

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
                 "next_attempt_at": outcome.until, **self.deferred_columns(outcome), "lease_token": None,
                 "lease_expires_at": None, "updated_at": now} for row, _, outcome in deferred]
        for row, _, _ in deferred:
            key = self.circuit_of(row)
            OUTBOX_DEFERRED.labels(key.split(" ", 1)[0] if key else "none").inc()
        for columns in {tuple(sorted(row)) for row in rows}:  # one statement per set of columns
            group = [row for row in rows if tuple(sorted(row)) == columns]
            db.session.connection().execute(
                update(table).where(table.c.id == bindparam("b_id"), table.c.lease_token == bindparam("b_token"))
                .values({name: bindparam(name) for name in columns if not name.startswith("b_")}),
                group,
            )

    def record(self, done: list[Sent]) -> dict[str, str]:
        """Record finished attempts in the current transaction (the turn commits); returns each attempted
        row's new status. Each row moves on by its answer and the retry schedule, still under this drain's
        lease; rows not attempted are released. Kinds that record more extend this."""
        outbox, now = self.outbox, self.outbox.now()
        table = outbox.model.__table__
        statuses: dict[str, str] = {}
        rows, unsent = [], []
        for row, attempted_at, outcome in done:
            if outcome is None:
                unsent.append(row.id)
                continue
            verdict, columns = self.answer(row, outcome, now)
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
        if rows:
            connection.execute(
                update(table).where(table.c.id == bindparam("b_id"), table.c.lease_token == bindparam("b_token"))
                .values({name: bindparam(name) for name in rows[0] if not name.startswith("b_")}),
                rows,
            )
        if unsent:
            connection.execute(update(table).where(table.c.id.in_(unsent), table.c.lease_token == self.token)
                               .values(lease_token=None, lease_expires_at=None))
        return statuses

    def _start(self, row: Claimed) -> None:
        group = self.group_of(row)
        self.in_flight[group] = self.in_flight.get(group, 0) + 1
        future = self.senders.submit(self._send, row)
        future.add_done_callback(self.finished.put)

    def _send(self, row: Claimed) -> Sent:
        """Send one row unless its transport is down (then it is deferred to the next probe)."""
        key = self.circuit_of(row)
        if key is None:
            return (row, *self.send(row))
        circuit = circuits.of(key)
        admitted, until = circuit.admit(self.outbox.now)
        if admitted == DEFER:
            return row, self.outbox.now(), Deferred(until, circuit.error)
        try:
            attempted_at, outcome = self.send(row)
            error = None if outcome is None else self.transport_failure(outcome)
            if error is not None:
                until, found_down = circuit.down(self.outbox.now(), error, probe_interval(*self.probe_seconds))
                return row, attempted_at, Deferred(until, error, found_down)
            if outcome is not None:
                circuit.answered()
            return row, attempted_at, outcome
        finally:
            if admitted == PROBE:
                circuit.probe_ended()

    def _collect(self, timeout: float | None) -> list[Sent]:
        """Wait for one attempt to finish (or the poll timeout), then take every other finished one."""
        futures = []
        try:
            futures.append(self.finished.get(timeout=timeout))
            while True:
                futures.append(self.finished.get_nowait())
        except queue.Empty:
            pass
        done = [future.result() for future in futures]
        for row, _, _ in done:
            group = self.group_of(row)
            self.in_flight[group] -= 1
            if not self.in_flight[group]:
                del self.in_flight[group]
        return done

    def _wake_another(self) -> None:
        """A claim found as many due rows as it asked for: a backlog, so another worker may help."""
        if self.on_backlog is not None:
            self.on_backlog()
            self.on_backlog = None  # once per drain; the drain it wakes wakes the next one
