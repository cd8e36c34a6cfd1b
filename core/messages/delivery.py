"""The message outbox kind (`MessageKind`): an email over one of the drain's SMTP connections, or an SMS; each
email's DATA step waits until the previous accepted one is recorded (docs/messages.md, "The outbox")."""
from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import select

from core.config import settings
from core.db import db
from core.messages.private_links import LinkUnreadable, unseal, with_link
from core.messages.runtime import runtime
from core.messages.schedule import SCHEDULE
from core.institutions.sender_domains import sending_identity
from core.messages.signing import DkimKeyError, DkimSigner, dkim_signer
from core.messages.transports import AfricasTalkingTransport, Outcome, SmtpTransport
from core.models.messages import SENDABLE_MESSAGE_STATUSES, Message
from core.outbox.circuit import Deferred
from core.outbox.drain import PERMANENT, SUCCEEDED, TEMPORARY, Drain, DrainResult, Failed, Sent
from core.outbox.leases import Outbox
from core.scoping import InstitutionScope

log = logging.getLogger(__name__)

# Renewed every fifth of it while the drain works (so over 33 s are always left, more than the two
# MAIL_TIMEOUTs a send needs): after a crash its messages are free again this soon.
LEASE = timedelta(seconds=45)
# SMTP connections (and sender threads) of one worker: the round trips of one overlap the others' work.
SENDER_CONNECTIONS = 4
# A drain holds this many claimed messages at most: one being sent per connection and one waiting behind it.
CAPACITY = 2 * SENDER_CONNECTIONS
# A drain stops claiming new batches after this long, so one job never runs for ever.
DRAIN_TIME_BUDGET = 20.0

MESSAGES = Outbox(
    model=Message, sendable=SENDABLE_MESSAGE_STATUSES, order=(Message.next_attempt_at, Message.id), lease=LEASE,
    schedule=SCHEDULE, succeeded="sent", given_up="failed", now=lambda: runtime.clock.now(),
)


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
    link_error: str | None = None  # why the personal link could not be put in (nothing is sent then)
    signer: DkimSigner | None = None  # the From domain's own DKIM key (None: the platform's)


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

    def send(self, message: _Claimed, before_data) -> Outcome:
        """`before_data` is called just before an email's DATA step (it may raise `NotNow`)."""
        if message.channel == "sms":
            return self.sms.send(recipient=message.recipient, text=message.body_text)
        if self.signing_error:
            return Outcome.down(self.signing_error)  # no email can go: not a failure of this one
        connection = self._idle.get()
        try:
            return connection.send(recipient=message.recipient, recipient_name=message.recipient_name,
                                   sender=message.sender, reply_to=message.reply_to, signer=message.signer,
                                   subject=message.subject, text=message.body_text, html=message.body_html,
                                   message_id=message.message_id_header or f"<{message.id}@karibu.localhost>",
                                   before_data=before_data)
        finally:
            self._idle.put(connection)

    def close(self) -> None:
        for connection in self._connections:
            connection.close()
        self.sms.close()


class NotNow(Exception):
    """The email was not handed over (its DATA step could not wait any longer for the previous one's record)."""


class MessageKind:
    """Messages as one drain sees them (an `OutboxKind` with `Circuits` and `Records.committed`): `gate` is held
    from an email's DATA step until its outcome is committed, so at most one accepted email is ever unrecorded."""

    outbox = MESSAGES
    # one claim per few emails (each claim is a statement more in the turn that the next DATA step waits for)
    claim_at_least = SENDER_CONNECTIONS

    def __init__(self, transports: Transports):
        self.transports = transports
        self.config = settings()
        # a send starts only with two MAIL_TIMEOUTs of its lease left (less: only when renewals fail)
        self.lease_needed = timedelta(seconds=2 * self.config.MAIL_TIMEOUT)
        self.gate = threading.Lock()
        self.gate_holder: str | None = None  # the message whose DATA step holds the gate

    def load(self, ids: list[str], lease_expires: datetime) -> list[_Claimed]:
        rows = db.session.execute(
            select(Message.id, Message.channel, Message.recipient, Message.recipient_name, Message.sender,
                   Message.reply_to, Message.subject,
                   Message.body_text, Message.body_html, Message.message_id_header, Message.attempts + 1,
                   Message.private_link, Message.institution_id)
            .where(Message.id.in_(ids)).order_by(Message.next_attempt_at, Message.created_at)
        ).all()
        return [_with_link(self._sent_as(_Claimed(*row[:-1]), row[-1])) for row in rows]

    def _sent_as(self, message: _Claimed, institution_id: str) -> _Claimed:
        """The message with the From and DKIM key it goes out with now: its institution's proven domain, or the
        platform's address when that domain is no longer proven by it (core.institutions.sender_domains)."""
        if message.channel != "email":
            return message
        sender, signer = sending_identity(InstitutionScope(institution_id), message.sender, self.config)
        return replace(message, sender=sender, signer=signer)

    def send(self, message: _Claimed) -> tuple[datetime, Outcome | None]:
        attempted_at = runtime.clock.now()
        if message.link_error:
            return attempted_at, Outcome.refused(message.link_error)

        def before_data() -> None:
            if not self.gate.acquire(timeout=2 * self.config.MAIL_TIMEOUT):
                raise NotNow()
            self.gate_holder = message.id

        try:
            return attempted_at, self.transports.send(message, before_data)
        except NotNow:
            return attempted_at, None
        except Exception as error:  # a bug must not lose the outcomes of the other messages
            log.exception("sending message %s failed unexpectedly", message.id)
            return attempted_at, Outcome.temporary(f"Unexpected error: {error.__class__.__name__}: {error}")

    def committed(self, finished: list[Sent], statuses: dict[str, str]) -> None:
        """The email holding the gate is recorded: the next one may go."""
        if self.gate_holder is not None and any(row.id == self.gate_holder for row, _, _ in finished):
            self.gate_holder = None
            self.gate.release()

    def failed_columns(self, failed: Failed) -> dict:
        """Shown on the applicant's timeline and the Messages page."""
        return {"last_error": failed.reason}

    def circuit_of(self, message: _Claimed) -> str:
        if message.channel == "sms":
            return f"sms {self.transports.sms.url}"
        return f"smtp {self.config.MAIL_SERVER}:{self.config.MAIL_PORT}"

    def transport_failure(self, outcome: Outcome) -> str | None:
        return outcome.error if outcome.transport_down else None

    def deferred_columns(self, deferred: Deferred) -> dict:
        return {"last_error": deferred.error}

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


def drain_due_messages(time_budget: float = DRAIN_TIME_BUDGET,
                       on_backlog: Callable[[], None] | None = None,
                       stop: threading.Event | None = None) -> DrainResult:
    """Send due messages until none is due, the time budget is spent or `stop` is set (`Drain.run`: a drain of its
    own SMTP connections, opened afresh for each); `on_backlog` is called (once) when more is due than this drain
    can start at once."""
    transports = Transports()
    try:
        with ThreadPoolExecutor(SENDER_CONNECTIONS, thread_name_prefix="message-sender") as senders:
            drain = Drain(MessageKind(transports), senders, capacity=CAPACITY, on_backlog=on_backlog)
            return drain.run(time_budget, stop)
    finally:
        transports.close()
