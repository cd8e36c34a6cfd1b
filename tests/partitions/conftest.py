"""Partitions exist only on PostgreSQL: the tests here are skipped on SQLite, which keeps plain tables."""
from __future__ import annotations

from unittest import mock

import pytest
from rq.job import Job

from core.db import redis_connection
from core.webhooks.runtime import runtime
from jobs import partitions as partitions_job
from tests.conftest import TEST_DB
from tests.webhooks.conftest import ManualClock

ONLY_ON_POSTGRES = pytest.mark.skipif(
    TEST_DB != "postgres", reason="monthly partitions exist only on PostgreSQL; SQLite keeps plain tables (migration 0028)")


def use_clock(monkeypatch, start) -> ManualClock:
    manual = ManualClock(start)
    monkeypatch.setattr(runtime, "clock", manual)
    return manual


def run_the_daily_job(redis_client) -> dict:
    """Start the partitions chain, run its job as the worker would, and check it scheduled the next day's."""
    redis_client.delete(partitions_job.CHAIN_KEY)
    assert partitions_job.ensure_partitions_scheduled() is True
    assert partitions_job.ensure_partitions_scheduled() is False  # one chain, however many workers ask
    first = Job.fetch(redis_connection().get(partitions_job.CHAIN_KEY).decode(), connection=redis_connection())
    with mock.patch.object(partitions_job, "get_current_job", return_value=first):
        made = partitions_job.make_partitions()
    following = Job.fetch(redis_connection().get(partitions_job.CHAIN_KEY).decode(), connection=redis_connection())
    assert following.id != first.id and following.func_name == "jobs.partitions.make_partitions"
    for job in (first, following):
        job.delete()
    redis_client.delete(partitions_job.CHAIN_KEY)
    return made
