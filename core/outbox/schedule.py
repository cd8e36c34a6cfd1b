"""The clock and the retry schedule of an outbox: when a failed attempt is tried again, and when it is given up."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Current time as a naive UTC datetime."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True)
class RetrySchedule:
    # Delay before attempt N+1, counted from attempt N (index 0 is the delay before attempt 2).
    delays: tuple[timedelta, ...]

    @property
    def max_attempts(self) -> int:
        return len(self.delays) + 1

    def next_attempt_at(self, failed_attempt_number: int, attempted_at: datetime) -> datetime | None:
        """When to try again after attempt `failed_attempt_number` (1-based) failed at `attempted_at`; None when
        that was the last attempt and the row is given up."""
        if failed_attempt_number < 1:
            raise ValueError("attempt numbers start at 1")
        if failed_attempt_number >= self.max_attempts:
            return None
        return attempted_at + self.delays[failed_attempt_number - 1]
