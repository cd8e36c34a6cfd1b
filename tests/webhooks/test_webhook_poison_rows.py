"""A poison delivery fails alone in a real worker: an endpoint secret that cannot be decrypted, or a send that
raises, becomes that delivery's failed attempt with the reason, and every other institution's deliveries go on."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from core.db import db
from tests.conftest import TEST_DB
from tests.jobs.worker_processes import end, metric, start_worker, wait_for
from tests.ops.processes import free_port
from tests.webhooks.test_webhook_engine import configure, deliveries, emit

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="real worker processes on PostgreSQL")

FAILURES = "karibu_outbox_row_failures_total"


def sql(app, statement: str, **values) -> None:
    with app.app_context():
        db.session.execute(text(statement), values)
        db.session.commit()


def log_json(app, institution) -> list[dict]:
    result = app.test_cli_runner().invoke(args=["webhooks", "log", "--institution", institution.id, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["deliveries"]


def test_an_unreadable_endpoint_secret_stops_only_its_own_deliveries(engine, factory, receiver, database_url,
                                                                     tmp_path):
    broken, healthy = factory.institution(), factory.institution()
    configure(engine, broken, receiver, url=receiver.url("127.0.0.1", "/broken"))
    configure(engine, healthy, receiver, url=receiver.url("127.0.0.1", "/healthy"))
    # the stored ciphertext overwritten in the database: no key can decrypt it any more
    sql(engine, "UPDATE webhook_endpoints SET secret_ciphertext = 'gAAAAABunreadable' WHERE institution_id = :id",
        id=broken.id)
    good = []
    for _ in range(4):
        emit(engine, "webhook.test", broken)
        good.append(emit(engine, "webhook.test", healthy))
    port = free_port()
    worker = start_worker(engine, receiver.ca_path, database_url, tmp_path / "worker.log",
                          WORKER_METRICS_PORT=str(port))
    try:
        assert wait_for(lambda: [d.status for d in deliveries(engine, healthy)] == ["delivered"] * 4, 30), \
            "another institution's unreadable secret held these deliveries back"
        assert wait_for(lambda: {d.status for d in deliveries(engine, broken)} == {"retry_scheduled"}, 10)
        for delivery in deliveries(engine, broken):
            assert (delivery.attempts, delivery.last_error_class, delivery.lease_token) == (1, "internal", None)
        for row in log_json(engine, broken):
            assert row["status"] == "retry_scheduled" and row["last_error_class"] == "internal"
            assert "could not prepare" in row["last_error"] and "cannot be decrypted" in row["last_error"]
        assert {r.path for r in receiver.requests} == {"/healthy"}
        assert metric(port, FAILURES, {"outbox": "webhook_deliveries", "step": "load"}) == 4

        good.append(emit(engine, "webhook.test", healthy))  # the lane goes on
        assert wait_for(lambda: [d.status for d in deliveries(engine, healthy)] == ["delivered"] * 5, 30)
        assert sorted(r.headers["webhook-id"] for r in receiver.requests) == sorted(good)
        assert worker.poll() is None
    finally:
        end(worker)


def test_a_send_that_raises_is_that_deliverys_failed_attempt_alone(engine, factory, receiver, database_url, tmp_path):
    institution = factory.institution()
    configure(engine, institution, receiver, url=receiver.url("127.0.0.1"))
    receiver.behaviour.delay_seconds = 1  # the others are in flight when the poisoned one raises
    events = [emit(engine, "webhook.test", institution) for _ in range(6)]
    poisoned = events[2]
    # a header value no HTTP library sends: preparing the request raises inside the sender thread
    sql(engine, "UPDATE events SET type = :type WHERE id = :id", type="webhook.test\r\nX-Injected: 1", id=poisoned)
    port = free_port()
    worker = start_worker(engine, receiver.ca_path, database_url, tmp_path / "worker.log",
                          WORKER_METRICS_PORT=str(port))
    try:
        assert wait_for(lambda: sorted(d.status for d in deliveries(engine, institution))
                        == ["delivered"] * 5 + ["retry_scheduled"], 30)
        by_event = {d.event_id: d for d in deliveries(engine, institution)}
        assert (by_event[poisoned].status, by_event[poisoned].attempts) == ("retry_scheduled", 1)
        [row] = [row for row in log_json(engine, institution) if row["event_id"] == poisoned]
        assert "could not send" in row["last_error"] and "InvalidHeader" in row["last_error"]
        assert metric(port, FAILURES, {"outbox": "webhook_deliveries", "step": "send"}) == 1
        # every other outcome was kept: each sent once, none again after the lease
        received = [r.headers["webhook-id"] for r in receiver.requests]
        assert sorted(received) == sorted(e for e in events if e != poisoned)
    finally:
        end(worker)
