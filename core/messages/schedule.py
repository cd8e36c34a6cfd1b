"""The message retry schedule: when a message whose attempt failed for a temporary reason is tried again, and
when it is given up (the schedule itself is core/outbox/schedule.py)."""
from __future__ import annotations

from datetime import timedelta

from core.outbox.schedule import RetrySchedule

# 8 attempts over about 22 hours.
SCHEDULE = RetrySchedule((
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(hours=1),
    timedelta(hours=3),
    timedelta(hours=6),
    timedelta(hours=12),
))
RETRY_DELAYS = SCHEDULE.delays
MAX_ATTEMPTS = SCHEDULE.max_attempts
