"""The message sweep: wake a worker when messages are due and unclaimed (retries coming due, jobs lost with
Redis, claims of a worker that died). Runs with the webhook sweep; an extra wake-up is harmless."""
from __future__ import annotations

from sqlalchemy import func, select

from core.db import db
from core.messages.delivery import due_conditions
from core.messages.outbox import signal_drain
from core.messages.runtime import runtime
from core.models.messages import Message


def count_due_messages() -> int:
    due = due_conditions(runtime.clock.now())
    count = db.session.scalar(select(func.count()).select_from(Message).where(*due))
    db.session.rollback()
    return count


def sweep_due_messages() -> int:
    """Queue a drain when messages are due and unclaimed; returns how many are due."""
    due = count_due_messages()
    if due:
        signal_drain()
    return due
