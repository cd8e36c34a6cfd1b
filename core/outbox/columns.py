"""The columns the outbox engine owns in every outbox table (a model mixin; no database access here, so the
models can import it)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column


class LeaseColumns:
    """A row's lease: a worker owns its next attempt until `lease_expires_at`, under its `lease_token`; a killed
    worker's lease lapses (core/outbox/leases.py)."""

    lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
