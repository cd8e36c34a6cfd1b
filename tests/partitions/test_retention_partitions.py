"""Retention on PostgreSQL drops whole expired months (detached, then dropped) while writes go on, keeps every
month a kept row needs, and still deletes the expired rows of a partly expired month in batches."""
from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import psycopg
from sqlalchemy import func, make_url, select, text

from core.db import db
from core.models import AuditLog, Event, utcnow
from core.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.privacy.partitions import month_start
from tests.partitions.conftest import ONLY_ON_POSTGRES, run_the_daily_job, use_clock

pytestmark = ONLY_ON_POSTGRES
WRITE_BLOCK_LIMIT_SECONDS = 0.1


class AuditWriter(threading.Thread):
    """Inserts audit rows of the current month one by one (each its own transaction) and times every insert."""

    def __init__(self, database_url: str):
        super().__init__(daemon=True)
        self.url = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
        self.durations, self.stop = [], threading.Event()

    def run(self):
        with psycopg.connect(self.url, autocommit=True) as connection:
            while not self.stop.is_set():
                started = time.perf_counter()
                connection.execute(
                    "INSERT INTO audit_log (created_at, request_id, actor, source, action, target, method, path,"
                    " query, status, duration_ms, client_ip, user_agent) VALUES ((now() AT TIME ZONE 'UTC'), 'w',"
                    " '', 'api', 'writing', '', 'GET', '/', '', 200, 1, '', '')")
                self.durations.append(time.perf_counter() - started)
                time.sleep(0.002)


def _partitions(table: str) -> set[str]:
    return set(db.session.scalars(text("SELECT inhrelid::regclass::text FROM pg_inherits"
                                       " WHERE inhparent = CAST(:table AS regclass)"), {"table": table}))


def test_retention_drops_whole_expired_months_while_writes_go_on(app, factory, monkeypatch, redis_client,
                                                                   database_url):
    clock = use_clock(monkeypatch, utcnow())
    institution = factory.institution()
    audit_cutoff = clock.now() - timedelta(days=400)
    expired_month, partly_expired = month_start(audit_cutoff, -3), month_start(audit_cutoff)
    events_cutoff = clock.now() - timedelta(days=60)
    old_events, referenced_events = month_start(events_cutoff, -3), month_start(events_cutoff, -2)
    attempts_month = month_start(clock.now() - timedelta(days=90), -3)
    with app.app_context():
        db.session.execute(text(
            "INSERT INTO audit_log (created_at, request_id, actor, source, action, target, method, path, query,"
            " status, duration_ms, client_ip, user_agent) SELECT :month + n * interval '1 minute', 'old', '',"
            " 'api', 'old', '', 'GET', '/', '', 200, 1, '', '' FROM generate_series(0, 1999) AS n"),
            {"month": expired_month})
        db.session.add_all([
            AuditLog(created_at=audit_cutoff - timedelta(hours=1), action="partly-expired-gone"),
            AuditLog(created_at=audit_cutoff + timedelta(hours=1), action="partly-expired-kept")])
        endpoint = WebhookEndpoint(institution_id=institution.id, url="https://h.test/",
                                   event_types=["payment.completed"], secret_ciphertext="x")
        db.session.add(endpoint)
        db.session.flush()
        for event_id, month in (("evt_old_alone", old_events), ("evt_old_referenced", referenced_events),
                                ("evt_old_delivered", attempts_month)):
            db.session.add(Event(id=event_id, institution_id=institution.id, type="payment.completed",
                                 occurred_at=month + timedelta(days=3), payload={}))
        # Still to send: its event's month stays whatever its age (no foreign key holds it on PostgreSQL).
        db.session.add(WebhookDelivery(id="whd_unsent", institution_id=institution.id, endpoint_id=endpoint.id,
                                       event_id="evt_old_referenced", event_type="payment.completed",
                                       status="retry_scheduled", created_at=clock.now()))
        db.session.add(WebhookDelivery(id="whd_old", institution_id=institution.id, endpoint_id=endpoint.id,
                                       event_id="evt_old_delivered", event_type="payment.completed",
                                       status="delivered", created_at=attempts_month + timedelta(days=3)))
        db.session.flush()
        db.session.add_all([WebhookAttempt(delivery_id="whd_old", number=number, url=endpoint.url, duration_ms=4,
                                           attempted_at=attempts_month + timedelta(days=3)) for number in (1, 2)])
        db.session.commit()
        run_the_daily_job(redis_client)  # the old rows' months get their partitions, out of the DEFAULT
        # The delivered event's month goes too: its delivery goes first (the deliveries' rule runs before).
        expected_gone = {f"audit_log_p{expired_month:%Y_%m}", f"events_p{old_events:%Y_%m}",
                         f"events_p{attempts_month:%Y_%m}", f"webhook_attempts_p{attempts_month:%Y_%m}"}
        assert f"events_p{referenced_events:%Y_%m}" in _partitions("events")
        assert f"audit_log_p{partly_expired:%Y_%m}" in _partitions("audit_log")
        db.session.rollback()

    writer = AuditWriter(database_url)
    writer.start()
    time.sleep(0.3)
    result = app.test_cli_runner().invoke(args=["retention", "run", "--json"])
    time.sleep(0.3)
    writer.stop.set()
    writer.join()

    assert result.exit_code == 0, result.output
    kinds = {kind["kind"]: kind for kind in json.loads(result.output)["kinds"]}
    assert set(kinds["audit_log"]["partitions_dropped"]) | set(kinds["events"]["partitions_dropped"]) | set(
        kinds["webhook_deliveries"]["partitions_dropped"]) == expected_gone
    assert kinds["audit_log"]["deleted"] == 2000 + 1  # a whole month, and one row of the partly expired month
    assert kinds["webhook_deliveries"]["deleted"] == 1
    assert kinds["webhook_deliveries"]["dependants_deleted"] == {"webhook_attempts": 2}
    assert kinds["events"]["deleted"] == 2
    with app.app_context():
        assert not expected_gone & (_partitions("audit_log") | _partitions("events") | _partitions("webhook_attempts"))
        assert set(db.session.scalars(select(AuditLog.action).where(AuditLog.action != "writing"))) == {
            "partly-expired-kept"}
        assert set(db.session.scalars(select(Event.id))) == {"evt_old_referenced"}
        written = db.session.scalar(select(func.count()).select_from(AuditLog).where(AuditLog.action == "writing"))
    assert written == len(writer.durations) > 20  # every write went through, none failed
    slowest = max(writer.durations)
    assert slowest < WRITE_BLOCK_LIMIT_SECONDS, f"a write waited {slowest * 1000:.0f} ms during retention"
