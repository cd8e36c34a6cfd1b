"""Message attempts: what the outbox engine (core/outbox) needs to know of messages.

A claimed message is sent by email (over one of the drain's SMTP connections) or SMS outside any transaction;
the server's answer makes it `sent`, a temporary failure (retried along the schedule) or a permanent one
(`failed` at once). The claim is a lease, as for webhook deliveries (core/outbox/leases.py): only one worker owns
a due message at a time, and a killed worker's lease lapses so the sweep can hand the message to another. A
worker never starts a send once its lease could have lapsed, so two sends of one message never overlap. A crash
between the server's acceptance and the recording of it means one more send later (at least once); every
attempt carries the same Message-ID, so mail clients show it once.

The DKIM key is read once per drain (core/messages/signing.py); while it is unusable, every email is a temporary
failure whose error names the setting to correct, and nothing goes out unsigned.
"""
from __future__ import annotations

import logging
import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import select

from core.config import settings
from core.db import db
from core.messages.private_links import LinkUnreadable, unseal, with_link
from core.messages.runtime import runtime
from core.messages.schedule import SCHEDULE
from core.messages.signing import DkimKeyError, dkim_signer
from core.messages.transports import AfricasTalkingTransport, Outcome, SmtpTransport
from core.models.messages import SENDABLE_MESSAGE_STATUSES, Message
from core.outbox.drain import PERMANENT, SUCCEEDED, TEMPORARY, Drain, DrainResult
from core.outbox.leases import Outbox, claim

log = logging.getLogger(__name__)

CLAIM_BATCH = 50
LEASE = timedelta(minutes=10)
# SMTP connections (and sender threads) of one worker: the round trips of one overlap the others' work.
SENDER_CONNECTIONS = 4
# A drain stops claiming new batches after this long, so one job never runs for ever.
DRAIN_TIME_BUDGET = 20.0

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
    sender: str | None
    reply_to: str | None
    subject: str
    body_text: str
    body_html: str | None
    message_id_header: str | None
    number: int  # the attempt it is about to get
    sealed_link: str | None  # the encrypted personal link, kept on the row until the message is sent
    # Never start a send after this: the lease could lapse before it ends (each SMTP step is bounded by
    # MAIL_TIMEOUT).
    deadline: datetime
    link_error: str | None = None  # why the personal link could not be put in (nothing is sent then)


class Transports:
    """The SMTP connections and the SMS session of one drain; a sender thread borrows one connection at a time
    (each connection is opened on first use and kept for the whole drain)."""

    def __init__(self):
        config = settings()
        try:
            signer, self.signing_error = dkim_signer(config), None
        except DkimKeyError as error:
            signer, self.signing_error = None, str(error)
            log.error("emails are not sent: %s", error)
        self._connections: list[SmtpTransport] = [SmtpTransport(config, signer) for _ in range(SENDER_CONNECTIONS)]
        self._idle: queue.SimpleQueue[SmtpTransport] = queue.SimpleQueue()
        for connection in self._connections:
            self._idle.put(connection)
        self.sms = AfricasTalkingTransport(config)

    def send(self, message: _Claimed) -> Outcome:
        if message.channel == "sms":
            return self.sms.send(recipient=message.recipient, text=message.body_text)
        if self.signing_error:
            return Outcome.temporary(self.signing_error)
        connection = self._idle.get()
        try:
            return connection.send(recipient=message.recipient, recipient_name=message.recipient_name,
                                   sender=message.sender, reply_to=message.reply_to,
                                   subject=message.subject, text=message.body_text, html=message.body_html,
                                   message_id=message.message_id_header or f"<{message.id}@karibu.localhost>")
        finally:
            self._idle.put(connection)

    def close(self) -> None:
        for connection in self._connections:
            connection.close()
        self.sms.close()


class _MessageDrain(Drain):
    # A batch of up to CLAIM_BATCH is claimed, sent and recorded in one statement each.
    whole_batches = True

    def __init__(self, senders: ThreadPoolExecutor, transports: Transports):
        super().__init__(MESSAGES, senders, capacity=CLAIM_BATCH)
        self.transports = transports

    def load(self, ids: list[str], lease_expires: datetime) -> list[_Claimed]:
        deadline = lease_expires - timedelta(seconds=settings().MAIL_TIMEOUT * 4)
        rows = db.session.execute(
            select(Message.id, Message.channel, Message.recipient, Message.recipient_name, Message.sender,
                   Message.reply_to, Message.subject,
                   Message.body_text, Message.body_html, Message.message_id_header, Message.attempts + 1,
                   Message.private_link)
            .where(Message.id.in_(ids)).order_by(Message.next_attempt_at, Message.created_at)
        ).all()
        return [_with_link(_Claimed(*row, deadline=deadline)) for row in rows]

    def send(self, message: _Claimed) -> tuple[datetime, Outcome | None]:
        attempted_at = runtime.clock.now()
        if attempted_at >= message.deadline:
            return attempted_at, None
        if message.link_error:
            return attempted_at, Outcome.refused(message.link_error)
        try:
            return attempted_at, self.transports.send(message)
        except Exception as error:  # a bug must not lose the outcomes of the other messages
            log.exception("sending message %s failed unexpectedly", message.id)
            return attempted_at, Outcome.temporary(f"Unexpected error: {error.__class__.__name__}: {error}")

    def answer(self, message: _Claimed, outcome: Outcome, now: datetime) -> tuple[str, dict]:
        """Sent, or a failure the server says is permanent (`failed` at once) or temporary (retried)."""
        verdict = SUCCEEDED if outcome.sent else PERMANENT if outcome.permanent else TEMPORARY
        return verdict, {"last_error": outcome.error, "provider_id": outcome.provider_id,
                         "sent_at": now if outcome.sent else None,
                         "private_link": None if outcome.sent else message.sealed_link}


def _with_link(message: _Claimed) -> _Claimed:
    """The message with its personal link put into its bodies, in memory only (core.messages.private_links)."""
    try:
        link = unseal(message.sealed_link)
    except LinkUnreadable as error:
        return replace(message, link_error=f"{error} Resend it from the applicant's file or send a new link.")
    return replace(message, body_text=with_link(message.body_text, link),
                   body_html=with_link(message.body_html, link, html=True))


def drain_due_messages(time_budget: float = DRAIN_TIME_BUDGET) -> DrainResult:
    """Claim and send due messages, a batch at a time, until none is due or the time budget is spent."""
    transports = Transports()
    try:
        with ThreadPoolExecutor(SENDER_CONNECTIONS, thread_name_prefix="message-sender") as senders:
            return _MessageDrain(senders, transports).run(time_budget)
    finally:
        transports.close()
