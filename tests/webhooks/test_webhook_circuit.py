"""A receiver that refuses connections is down for every delivery of its endpoint: the endpoint's circuit opens,
the deliveries wait for the next probe (15–30 s) with their attempts untouched, and all go once it answers.
Each finding (the opening, each failed probe) is one failure of the endpoint, so one down for good is still
disabled at the threshold."""
from __future__ import annotations

import socket
import struct
import threading

import pytest
from sqlalchemy import func, select

from core.db import db
from core.models.webhooks import WebhookAttempt, WebhookEndpoint
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES
from core.webhooks.sweep import sweep_due_deliveries
from tests.webhooks.conftest import RECEIVER_HOST, run_worker
from tests.webhooks.test_webhook_engine import configure, deliveries, emit


def attempts_recorded(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(WebhookAttempt))


def endpoint_of(app, institution) -> WebhookEndpoint:
    with app.app_context():
        endpoint = db.session.scalars(select(WebhookEndpoint)
                                      .where(WebhookEndpoint.institution_id == institution.id)).one()
        db.session.expunge(endpoint)
        return endpoint


class ResettingPort:
    """A port where the receiver is down: each connection is taken and reset at once, and counted."""

    def __init__(self):
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._reset_each, daemon=True).start()

    def _reset_each(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:  # closed
                return
            self.connections += 1
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()

    def close(self) -> None:
        self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()


@pytest.fixture
def down_port():
    port = ResettingPort()
    yield port
    port.close()


def refusing(engine, factory, receiver, down_port, count: int):
    """An institution whose endpoint's receiver resets every connection, and `count` events for it, attempted
    once."""
    institution = factory.institution()
    configure(engine, institution, receiver, url=f"https://{RECEIVER_HOST}:{down_port.port}/hooks")
    events = [emit(engine, "webhook.test", institution) for _ in range(count)]
    run_worker(engine)
    return institution, events


def probe(engine, clock, institution, due: int) -> None:
    """Move to the next probe time; the sweep finds `due` deliveries; a worker drains them."""
    clock.move_to(max(d.next_attempt_at for d in deliveries(engine, institution)))
    with engine.app_context():
        assert sweep_due_deliveries() == due
    run_worker(engine)


def test_a_receiver_refusing_connections_uses_no_retries_and_gets_the_backlog_at_once_when_back(
        engine, factory, receiver, clock, down_port):
    institution, events = refusing(engine, factory, receiver, down_port, 3)
    assert 1 <= down_port.connections <= 3  # the attempts under way when the first failure opened the circuit
    waiting = deliveries(engine, institution)
    assert {(d.status, d.attempts, d.last_error_class) for d in waiting} == {("retry_scheduled", 0, "connection")}
    assert all(15 <= (d.next_attempt_at - d.updated_at).total_seconds() <= 30 for d in waiting)
    assert attempts_recorded(engine) == 0

    for _ in range(4):  # about two minutes down: one probe each time, the others wait for its answer
        before = down_port.connections
        probe(engine, clock, institution, due=3)
        assert down_port.connections == before + 1
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("retry_scheduled", 0)}
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (True, 1 + 4)  # found down, then 4 probes

    configure(engine, institution, receiver)  # the receiver answers again (at its new address)
    probe(engine, clock, institution, due=3)
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("delivered", 1)}
    assert sorted(r.headers["X-Karibu-Event-Id"] for r in receiver.server.requests) == sorted(events)
    assert attempts_recorded(engine) == 3
    assert endpoint_of(engine, institution).consecutive_failures == 0


def test_a_receiver_down_for_good_is_disabled_after_the_threshold_of_failed_probes(engine, factory, receiver,
                                                                                   clock, down_port):
    institution, _ = refusing(engine, factory, receiver, down_port, 3)
    for _ in range(DISABLE_AFTER_CONSECUTIVE_FAILURES - 2):
        probe(engine, clock, institution, due=3)
    assert endpoint_of(engine, institution).enabled
    probe(engine, clock, institution, due=3)  # the 20th finding
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (False, DISABLE_AFTER_CONSECUTIVE_FAILURES)
    assert {(d.status, d.attempts) for d in deliveries(engine, institution)} == {("endpoint_disabled", 0)}
