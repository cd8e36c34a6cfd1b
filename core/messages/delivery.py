"""Message attempts: claim due messages, send them outside any transaction, record each outcome.

The claim is a lease, as for webhook deliveries (core/outbox/leases.py): only one worker owns a due message at
a time, and a killed worker's lease lapses so the sweep can hand the message to another. A worker never starts
a send once its lease could have lapsed, so two sends of one message never overlap. A crash between the
server's acceptance and the recording of it means one more send later (at least once); every attempt carries
the same Message-ID, so mail clients show it once.
"""
from __future__ import annotations

import logging
import queue
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, select, update

from core.config import settings
from core.db import db
from core.messages.runtime import runtime
from core.messages.schedule import SCHEDULE, next_attempt_at
from core.messages.transports import AfricasTalkingTransport, Outcome, SmtpTransport
from core.models.messages import SENDABLE_MESSAGE_STATUSES, Message
from core.outbox.leases import Outbox, claim, without_waiting_for_disk

log = logging.getLogger(__name__)

CLAIM_BATCH = 50
LEASE = timedelta(minutes=10)
# SMTP connections (and sender threads) of one worker: the round trips of one overlap the others' work.
SENDER_CONNECTIONS = 4
# A drain stops claiming new batches after this long, so one job never runs for ever.
DRAIN_TIME_BUDGET = 20.0


@dataclass(frozen=True)
class AttemptReport:
    message_id: str
    status: str  # the message's status after the attempt
    outcome: Outcome


@dataclass(frozen=True)
class DrainResult:
    attempts: list[AttemptReport]
    more_due: bool  # the time budget ran out before the due messages did


MESSAGES = Outbox(
    model=Message, sendable=SENDABLE_MESSAGE_STATUSES, order=(Message.next_attempt_at, Message.id), lease=LEASE,
    schedule=SCHEDULE, succeeded="sent", given_up="failed", now=lambda: runtime.clock.now(),
)


def claim_due(now: datetime, limit: int = CLAIM_BATCH) -> tuple[str, datetime, list[str]]:
    """Lease up to `limit` due, unclaimed messages (oldest first): (lease token, lease end, their ids)."""
    claimed = claim(MESSAGES, now, limit)
    return claimed.token, claimed.expires, claimed.ids


@dataclass(frozen=True)
class _Claimed:
    id: str
    channel: str
    recipient: str
    recipient_name: str
    subject: str
    body_text: str
    body_html: str | None
    message_id_header: str | None
    attempts: int


class Transports:
    """The SMTP connections and the SMS session of one drain; a sender thread borrows one connection at a time
    (each connection is opened on first use and kept for the whole drain)."""

    def __init__(self):
        config = settings()
        self._connections: list[SmtpTransport] = [SmtpTransport(config) for _ in range(SENDER_CONNECTIONS)]
        self._idle: queue.SimpleQueue[SmtpTransport] = queue.SimpleQueue()
        for connection in self._connections:
            self._idle.put(connection)
        self.sms = AfricasTalkingTransport(config)

    def send(self, message: _Claimed) -> Outcome:
        if message.channel == "sms":
            return self.sms.send(recipient=message.recipient, text=message.body_text)
        connection = self._idle.get()
        try:
            return connection.send(recipient=message.recipient, recipient_name=message.recipient_name,
                                   subject=message.subject, text=message.body_text, html=message.body_html,
                                   message_id=message.message_id_header or f"<{message.id}@karibu.localhost>")
        finally:
            self._idle.put(connection)

    def close(self) -> None:
        for connection in self._connections:
            connection.close()
        self.sms.close()


def drain_due_messages(time_budget: float = DRAIN_TIME_BUDGET) -> DrainResult:
    """Claim and send due messages, a batch at a time, until none is due or the time budget is spent."""
    started = time.monotonic()
    reports: list[AttemptReport] = []
    transports = Transports()
    try:
        with ThreadPoolExecutor(SENDER_CONNECTIONS, thread_name_prefix="message-sender") as senders:
            while time.monotonic() - started < time_budget:
                token, expires, ids = claim_due(runtime.clock.now())
                if not ids:
                    return DrainResult(reports, more_due=False)
                reports.extend(_send_batch(_load(ids), token, expires, transports, senders))
        return DrainResult(reports, more_due=True)
    finally:
        transports.close()


def _load(ids: list[str]) -> list[_Claimed]:
    rows = db.session.execute(
        select(Message.id, Message.channel, Message.recipient, Message.recipient_name, Message.subject,
               Message.body_text, Message.body_html, Message.message_id_header, Message.attempts)
        .where(Message.id.in_(ids)).order_by(Message.next_attempt_at, Message.created_at)
    ).all()
    db.session.commit()  # no transaction stays open while messages are in flight
    return [_Claimed(*row) for row in rows]


def _send_batch(messages: list[_Claimed], token: str, expires: datetime, transports: Transports,
                senders: ThreadPoolExecutor) -> list[AttemptReport]:
    """Send a claimed batch on the sender threads (they touch no database session); record the outcomes."""
    # Never start a send once the lease could lapse before it ends (each SMTP step is bounded by MAIL_TIMEOUT).
    deadline = expires - timedelta(seconds=settings().MAIL_TIMEOUT * 4)

    def attempt(message: _Claimed) -> tuple[_Claimed, datetime, Outcome | None]:
        attempted_at = runtime.clock.now()
        if attempted_at >= deadline:
            return message, attempted_at, None
        try:
            return message, attempted_at, transports.send(message)
        except Exception as error:  # a bug must not lose the outcomes of the rest of the batch
            log.exception("sending message %s failed unexpectedly", message.id)
            return message, attempted_at, Outcome.temporary(f"Unexpected error: {error.__class__.__name__}: {error}")

    results = list(senders.map(attempt, messages))
    done = [(message, at, outcome) for message, at, outcome in results if outcome is not None]
    unsent = [message.id for message, _, outcome in results if outcome is None]
    return _record(done, unsent, token)


def _record(done: list[tuple[_Claimed, datetime, Outcome]], unsent: list[str], token: str) -> list[AttemptReport]:
    """Record a batch of attempts in one transaction; release the lease of those not attempted."""
    now = runtime.clock.now()
    without_waiting_for_disk()
    table = Message.__table__
    reports, rows = [], []
    for message, attempted_at, outcome in done:
        number = message.attempts + 1
        if outcome.sent:
            status, following = "sent", None
        elif outcome.permanent:
            status, following = "failed", None
        else:
            following = next_attempt_at(number, attempted_at)
            status = "retry_scheduled" if following is not None else "failed"
        reports.append(AttemptReport(message.id, status, outcome))
        rows.append({
            "b_id": message.id, "b_token": token, "status": status, "attempts": number,
            "next_attempt_at": following, "last_error": outcome.error, "provider_id": outcome.provider_id,
            "sent_at": now if outcome.sent else None, "lease_token": None, "lease_expires_at": None,
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
        connection.execute(update(table).where(table.c.id.in_(unsent), table.c.lease_token == token)
                           .values(lease_token=None, lease_expires_at=None))
    db.session.commit()
    return reports

