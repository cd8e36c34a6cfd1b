"""The webhook retry schedule: when a failed delivery is tried again, when it is dead, and when the endpoint is
disabled (the schedule itself is core/outbox/schedule.py)."""

from __future__ import annotations

from datetime import timedelta

from core.outbox.schedule import RetrySchedule

SCHEDULE = RetrySchedule((
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=12),
    timedelta(hours=24),
    timedelta(hours=24),
))
MAX_ATTEMPTS = SCHEDULE.max_attempts
next_attempt_at = SCHEDULE.next_attempt_at
DISABLE_AFTER_CONSECUTIVE_FAILURES = 20
