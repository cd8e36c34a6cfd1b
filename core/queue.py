"""Enqueue RQ jobs by dotted name, so `core` never imports `jobs`."""
from __future__ import annotations

from rq import Queue

from core.extensions import redis_connection

QUEUE_NAMES = ("webhooks", "messages", "default")
DEFAULT_JOB_TIMEOUT = 60


def queue(name: str) -> Queue:
    if name not in QUEUE_NAMES:
        raise ValueError(f"unknown queue {name!r}")
    return Queue(name, connection=redis_connection(), default_timeout=DEFAULT_JOB_TIMEOUT)


def enqueue(queue_name: str, function_path: str, *args, **kwargs):
    return queue(queue_name).enqueue(function_path, *args, **kwargs)
