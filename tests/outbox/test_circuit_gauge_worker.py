"""A real worker's karibu_outbox_circuits_open: it shows a webhook endpoint whose receiver is down, and clears once
the endpoint is disabled or deleted (no row comes to probe its circuit any more)."""
from __future__ import annotations

import os
import signal

import pytest
import requests

from core.errors import Conflict
from core.outbox.circuit import UNWATCHED_AFTER_SECONDS
from core.scoping import InstitutionScope
from core.webhooks.endpoints import disable_endpoint, remove_endpoint
from tests.conftest import TEST_DB
from tests.ops.processes import free_port
from tests.webhooks.conftest import (  # noqa: F401
    clock,
    delivering,
    engine,
    receiver,
    resolver,
    wait_until,
)
from tests.webhooks.test_webhook_circuit import down_port  # noqa: F401 (fixture)
from tests.webhooks.test_webhook_engine import configure, emit
from tests.webhooks.test_webhook_recovery import start_worker

pytestmark = [pytest.mark.skipif(TEST_DB != "postgres", reason="a real worker process on the test database"),
              pytest.mark.long_running]  # a minute of waiting each: scheduled first

PROBE_SECONDS = 5  # 20 failed probes (the endpoint's own disabling) would take 100 s: longer than the test
# The probe time, the unwatched grace, a sweep and a scrape.
CLEARED_WITHIN_SECONDS = PROBE_SECONDS + UNWATCHED_AFTER_SECONDS + 15


def webhook_circuits_open(metrics_port: int) -> float | None:
    try:
        text = requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2).text
    except requests.RequestException:
        return None
    for line in text.splitlines():
        if line.startswith('karibu_outbox_circuits_open{kind="webhook"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def stopped(app, institution, stop: str) -> bool:
    """Disable or delete the institution's endpoint (False: a probe holds a lease now, try again)."""
    with app.app_context():
        try:
            (disable_endpoint if stop == "disabled" else remove_endpoint)(InstitutionScope(institution.id))
        except Conflict:
            return False
    return True


@pytest.mark.parametrize("stop", ["disabled", "deleted"])
def test_the_circuits_gauge_clears_when_the_endpoint_is_disabled_or_deleted(
        engine, factory, receiver, down_port, database_url, stop):  # noqa: F811 (the fixtures imported above)
    institution = factory.institution()
    configure(engine, institution, receiver, url=f"https://127.0.0.1:{down_port.port}/hooks")
    metrics_port = free_port()
    worker = start_worker(engine, receiver, database_url, WORKER_METRICS_PORT=str(metrics_port),
                          OUTBOX_PROBE_MIN_SECONDS=str(PROBE_SECONDS), OUTBOX_PROBE_MAX_SECONDS=str(PROBE_SECONDS),
                          WEBHOOK_SWEEP_SECONDS="2", WORKER_MAINTENANCE_SECONDS="2")
    try:
        for _ in range(3):
            emit(engine, "webhook.test", institution)
        assert wait_until(lambda: webhook_circuits_open(metrics_port) == 1.0, 60), "the circuit never opened"
        probed = down_port.connections
        assert wait_until(lambda: down_port.connections > probed, 30), "no probe"  # the rows come to probe it
        assert webhook_circuits_open(metrics_port) == 1.0

        assert wait_until(lambda: stopped(engine, institution, stop), 30)
        assert wait_until(lambda: webhook_circuits_open(metrics_port) == 0.0, CLEARED_WITHIN_SECONDS), \
            "the gauge still counts the circuit of an endpoint no longer sent to"
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(30)
