"""The message outbox: one row per email or SMS to an applicant, written with the change that causes it."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow
from core.outbox.columns import LeaseColumns

# `test`: written in test mode (an institution's sandbox) and never sent.
MESSAGE_STATUSES = ("queued", "sent", "retry_scheduled", "failed", "test")
# Statuses a worker may still send; `sent` and `failed` are final until staff resend a failed one.
SENDABLE_MESSAGE_STATUSES = ("queued", "retry_scheduled")
CHANNELS = ("email", "sms")


class Message(LeaseColumns, Base):
    __tablename__ = "messages"
    __table_args__ = (
        # Exactly one message per sent decision and channel, whatever retries or replays happen.
        UniqueConstraint("decision_id", "channel", name="uq_messages_decision_channel"),
        Index("ix_messages_institution_created", "institution_id", "created_at", "id"),
        Index("ix_messages_status_next", "status", "next_attempt_at"),
        Index("ix_messages_application_created", "application_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("msg"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    application_id: Mapped[str | None] = mapped_column(ForeignKey("applications.id"), nullable=True)
    decision_id: Mapped[str | None] = mapped_column(ForeignKey("decisions.id"), nullable=True)
    channel: Mapped[str] = mapped_column(String(8))
    recipient: Mapped[str] = mapped_column(String(254))
    recipient_name: Mapped[str] = mapped_column(String(200), default="")
    template: Mapped[str] = mapped_column(String(64))
    language: Mapped[str] = mapped_column(String(8))
    subject: Mapped[str] = mapped_column(String(300), default="")
    # The From mailbox (None: the platform's MAIL_DEFAULT_SENDER) and Reply-To of an email, fixed when written.
    sender: Mapped[str | None] = mapped_column(String(300), nullable=True)
    reply_to: Mapped[str | None] = mapped_column(String(254), nullable=True)
    # The body holds core.messages.private_links.LINK_SLOT where its personal link goes; the link itself is
    # here, encrypted, until the message is sent (never in the body, never usable from the database alone).
    private_link: Mapped[str | None] = mapped_column(Text, nullable=True)
    body_text: Mapped[str] = mapped_column(Text)
    body_html: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The RFC 5322 Message-ID, fixed when the message is written so that every attempt carries the same one.
    message_id_header: Mapped[str | None] = mapped_column(String(255), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # The server's or gateway's answer to the last failed attempt (e.g. "550 5.1.1 no such user").
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The gateway's id of a sent SMS (Africa's Talking messageId); the SMTP server's queue answer for email.
    provider_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
