"""Enqueue RQ jobs by dotted name, so `core` never imports `jobs`; the one place `core` reaches RQ."""
from __future__ import annotations

from typing import TYPE_CHECKING

from core.db import redis_connection

if TYPE_CHECKING:
    from rq import Queue

QUEUE_NAMES = ("webhooks", "messages", "default")
DEFAULT_JOB_TIMEOUT = 60


def queue(name: str) -> Queue:
    """RQ is imported on the first enqueue, not by every web worker at start."""
    from rq import Queue

    if name not in QUEUE_NAMES:
        raise ValueError(f"unknown queue {name!r}")
    return Queue(name, connection=redis_connection(), default_timeout=DEFAULT_JOB_TIMEOUT)


def enqueue(queue_name: str, function_path: str, *args, **kwargs):
    return queue(queue_name).enqueue(function_path, *args, **kwargs)
