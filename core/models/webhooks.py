"""Webhook endpoint settings, one delivery per (event, endpoint), and every attempt made for it."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow
from core.outbox.columns import LeaseColumns

DELIVERY_STATUSES = ("pending", "retry_scheduled", "delivered", "dead", "endpoint_disabled")
# Statuses a worker may still send; everything else is final until a redeliver or recover.
SENDABLE_STATUSES = ("pending", "retry_scheduled")


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("whe"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), unique=True)
    # The URL as shown everywhere: its query values masked (`?token=••••`). The real query string, which
    # often carries a token, is kept only encrypted, like the signing secret.
    url: Mapped[str] = mapped_column(String(2048))
    url_query_ciphertext: Mapped[str | None] = mapped_column(Text, nullable=True)
    event_types: Mapped[list] = mapped_column(JSON)
    include_applicant_name: Mapped[bool] = mapped_column(Boolean, default=False)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # Fernet token of the `whsec_…` secret, key derived from SECRET_KEY; never the secret itself.
    secret_ciphertext: Mapped[str] = mapped_column(Text)
    secret_rotated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class WebhookDelivery(LeaseColumns, Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_institution_created", "institution_id", "created_at", "id"),
        Index("ix_webhook_deliveries_institution_status_created", "institution_id", "status", "created_at", "id"),
        Index("ix_webhook_deliveries_status_next", "status", "next_attempt_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("whd"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"))
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id"), index=True)
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id"), index=True)
    event_type: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(32), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_response_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error_class: Mapped[str | None] = mapped_column(String(32), nullable=True)
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("wha"))
    delivery_id: Mapped[str] = mapped_column(ForeignKey("webhook_deliveries.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    url: Mapped[str] = mapped_column(String(2048))
    attempted_at: Mapped[datetime] = mapped_column(DateTime)
    duration_ms: Mapped[int] = mapped_column(Integer)
    response_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # timeout, dns, tls, connection, redirect, blocked_address, http_status; None when delivered.
    error_class: Mapped[str | None] = mapped_column(String(32), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    response_excerpt: Mapped[str | None] = mapped_column(Text, nullable=True)
    # As sent (the signature included; the signing secret is never a header) and as received, in order.
    request_headers: Mapped[list | None] = mapped_column(JSON, nullable=True)
    response_headers: Mapped[list | None] = mapped_column(JSON, nullable=True)
