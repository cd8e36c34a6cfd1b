"""Institutions' sending domains: each proven in DNS by its own TXT record and signed with its own DKIM key."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.models.base import Base, new_id, utcnow

SENDER_DOMAIN_PENDING = "pending"  # recorded, never proven
SENDER_DOMAIN_VERIFIED = "verified"  # both records found at the last check: mail goes From it
SENDER_DOMAIN_LOST = "lost"  # was proven, a later check found a record gone or changed: no longer used
SENDER_DOMAIN_STATUSES = (SENDER_DOMAIN_PENDING, SENDER_DOMAIN_VERIFIED, SENDER_DOMAIN_LOST)


class SenderDomain(Base):
    """One domain of one institution; another institution adding the same domain has its own row, token and key."""
    __tablename__ = "sender_domains"
    __table_args__ = (UniqueConstraint("institution_id", "domain", name="uq_sender_domains_institution_domain"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: new_id("sdm"))
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), index=True)
    # Lower case, ASCII (an IDN in its xn-- form), without a trailing dot.
    domain: Mapped[str] = mapped_column(String(253))
    # The ownership TXT record's value is `karibu-domain-verification=<token>`: random, one per institution and domain.
    verification_token: Mapped[str] = mapped_column(String(64))
    dkim_selector: Mapped[str] = mapped_column(String(63))
    # Base64 DER SubjectPublicKeyInfo: the `p=` of the DKIM record.
    dkim_public_key: Mapped[str] = mapped_column(Text)
    # Fernet token of the PEM RSA private key (key derived from SECRET_KEY, label in core.institutions.sender_domains).
    dkim_private_key_ciphertext: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=SENDER_DOMAIN_PENDING)
    verified_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    last_checked_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # What the last check found missing or wrong (a list of sentences); empty when proven.
    last_problems: Mapped[list | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
