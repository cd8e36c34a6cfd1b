"""The message outbox's wake-up: a drain job (jobs/messages.py) queued after the commit that wrote messages."""
from __future__ import annotations

from core.outbox.wakeup import DrainSignal

DRAIN_JOB = "jobs.messages.drain"
QUEUE_NAME = "messages"

drain_signal = DrainSignal("messages", QUEUE_NAME, DRAIN_JOB)
