"""The retry schedule: when a failed delivery is tried again, and when it is dead."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Protocol

# Delay before attempt N+1, counted from attempt N (index 0 is the delay before attempt 2).
RETRY_DELAYS: tuple[timedelta, ...] = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=12),
    timedelta(hours=24),
    timedelta(hours=24),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
DISABLE_AFTER_CONSECUTIVE_FAILURES = 20


class Clock(Protocol):
    def now(self) -> datetime:
        """Current time as a naive UTC datetime."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc).replace(tzinfo=None)


def next_attempt_at(failed_attempt_number: int, attempted_at: datetime) -> datetime | None:
    """When to try again after attempt `failed_attempt_number` (1-based) failed at `attempted_at`;
    None when that was the last attempt and the delivery is dead."""
    if failed_attempt_number < 1:
        raise ValueError("attempt numbers start at 1")
    if failed_attempt_number >= MAX_ATTEMPTS:
        return None
    return attempted_at + RETRY_DELAYS[failed_attempt_number - 1]
