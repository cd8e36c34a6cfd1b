"""When a message whose attempt failed for a temporary reason is tried again, and when it is given up."""
from __future__ import annotations

from datetime import datetime, timedelta

from core.webhooks.schedule import Clock, SystemClock  # noqa: F401  (one clock protocol for both engines)

# Delay before attempt N+1, counted from attempt N: 8 attempts over about 22 hours.
RETRY_DELAYS: tuple[timedelta, ...] = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(hours=1),
    timedelta(hours=3),
    timedelta(hours=6),
    timedelta(hours=12),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1


def next_attempt_at(failed_attempt_number: int, attempted_at: datetime) -> datetime | None:
    """When to try again after attempt `failed_attempt_number` (1-based) failed temporarily; None when that
    was the last attempt and the message is `failed`."""
    if failed_attempt_number < 1:
        raise ValueError("attempt numbers start at 1")
    if failed_attempt_number >= MAX_ATTEMPTS:
        return None
    return attempted_at + RETRY_DELAYS[failed_attempt_number - 1]
