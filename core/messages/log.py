"""Reading the outbox (the Messages page, the applicant file, the CLI) and resending a failed message."""
from __future__ import annotations

from sqlalchemy import select

from core.errors import Conflict, InvalidInput, NotFound
from core.db import db
from core.i18n import LANGUAGES
from core.messages.composition import response_links
from core.messages.outbox import drain_signal
from core.messages.private_links import LINK_SLOT, SHOWN_INSTEAD, seal, shown
from core.messages.runtime import runtime
from core.models import Decision, Institution
from core.models.messages import CHANNELS, MESSAGE_STATUSES, Message
from core.paging import KeysetPage
from core.scoping import InstitutionScope

MAX_LIST_LIMIT = 500


def _check_filters(status: str | None, channel: str | None, limit: int) -> None:
    if status is not None and status not in MESSAGE_STATUSES:
        raise InvalidInput(f"status must be one of: {', '.join(MESSAGE_STATUSES)}", field="status")
    if channel is not None and channel not in CHANNELS:
        raise InvalidInput(f"channel must be one of: {', '.join(CHANNELS)}", field="channel")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIST_LIMIT}", field="limit")


def list_messages(scope: InstitutionScope | None, *, status: str | None = None, channel: str | None = None,
                  limit: int = 50, before: str | None = None) -> KeysetPage[Message]:
    """Messages newest first, optionally one status and channel; every institution's when `scope` is None
    (operators' CLI)."""
    _check_filters(status, channel, limit)
    query = scope.select(Message) if scope is not None else select(Message)
    if status is not None:
        query = query.where(Message.status == status)
    if channel is not None:
        query = query.where(Message.channel == channel)
    if before is not None:
        anchor = scope.get(Message, before) if scope is not None else db.session.get(Message, before)
        if anchor is None:
            raise InvalidInput("before must be the id of a message", field="before")
        query = query.where((Message.created_at < anchor.created_at)
                            | ((Message.created_at == anchor.created_at) & (Message.id < anchor.id)))
    rows = list(db.session.scalars(query.order_by(Message.created_at.desc(), Message.id.desc()).limit(limit + 1)))
    return KeysetPage.of(rows, limit)


def messages_of_application(scope: InstitutionScope, application_id: str) -> list[Message]:
    return list(db.session.scalars(scope.select(Message).where(Message.application_id == application_id)
                                   .order_by(Message.created_at, Message.id)))


def get_message(scope: InstitutionScope, message_id: str) -> Message:
    """One message of the institution; NotFound for a missing or foreign id."""
    return scope.require(Message, message_id, what="Message")


def resend_message(scope: InstitutionScope, message_id: str) -> Message:
    """Queue a failed message again now, with a fresh retry schedule (the same content and Message-ID; a
    decision message gets a fresh answer link)."""
    message = db.session.scalars(scope.select(Message).where(Message.id == message_id).with_for_update()
                                 ).one_or_none()
    if message is None:
        raise NotFound("Message not found")
    if message.status != "failed":
        raise Conflict(f"Only a failed message can be resent; this one is {message.status.replace('_', ' ')}.")
    if message.decision_id is not None:
        # A fresh answer link, valid from now (the first one may be near its end, or gone with an old key).
        message.private_link = seal(response_links([db.session.get(Decision, message.decision_id)])
                                    .get(message.decision_id))
    elif LINK_SLOT in message.body_text and message.private_link is None:
        raise Conflict("This email's link can no longer be sent; send a new invitation or password reset instead.")
    now = runtime.clock.now()
    message.status = "queued"
    message.attempts = 0
    message.next_attempt_at = now
    message.lease_token = message.lease_expires_at = None
    message.updated_at = now
    drain_signal.after_commit()
    db.session.commit()
    return message


def default_language_of(scope: InstitutionScope) -> str:
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return institution.default_language


def set_default_language(scope: InstitutionScope, language: str) -> Institution:
    """The language of messages and public pages for applicants who did not choose one."""
    if language not in LANGUAGES:
        raise InvalidInput(f"language must be one of: {', '.join(LANGUAGES)}", field="language")
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    institution.default_language = language
    db.session.commit()
    return institution


def without_private_links(text: str | None, shown_instead: str = SHOWN_INSTEAD) -> str:
    """The text of a message as staff may read it: its personal link named by `shown_instead`, never filled in
    (rows written before links were kept out of bodies had their tokens masked by migration 0019)."""
    return shown(text, shown_instead)
