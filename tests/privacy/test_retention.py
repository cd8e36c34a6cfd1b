"""Retention on a controllable clock: what is older than its period goes, in batches; the rest stays."""
from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from core.db import db, redis_connection
from core.models import AuditLog, Event, utcnow
from core.models.messages import Message
from core.models.verification import VerificationCharge
from core.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.webhooks.runtime import runtime
from jobs import retention as retention_job
from tests.webhooks.conftest import ManualClock


@pytest.fixture
def clock(monkeypatch):
    manual = ManualClock(utcnow())
    monkeypatch.setattr(runtime, "clock", manual)
    return manual


def _days_ago(clock, days: float):
    return clock.now() - timedelta(days=days)


@pytest.fixture
def history(app, factory, clock):
    """Rows on both sides of every cutoff, with ids named after what should happen to them."""
    institution = factory.institution()
    with app.app_context():
        for label, age in (("audit-old-1", 401), ("audit-old-2", 500), ("audit-old-3", 450),
                           ("audit-keep", 398)):
            db.session.add(AuditLog(created_at=_days_ago(clock, age), institution_id=institution.id,
                                    action=label, request_id=label))
        endpoint = WebhookEndpoint(id="whe_retention", institution_id=institution.id, url="https://h.test/",
                                   event_types=["payment.completed"], secret_ciphertext="x")
        db.session.add(endpoint)
        db.session.flush()

        def event(event_id, age):
            db.session.add(Event(id=event_id, institution_id=institution.id, type="payment.completed",
                                 occurred_at=_days_ago(clock, age), payload={}))
            db.session.flush()

        def delivery(delivery_id, event_id, age, status, attempts=0):
            db.session.add(WebhookDelivery(id=delivery_id, institution_id=institution.id, endpoint_id=endpoint.id,
                                           event_id=event_id, event_type="payment.completed", status=status,
                                           created_at=_days_ago(clock, age), next_attempt_at=_days_ago(clock, age)))
            db.session.flush()
            for number in range(1, attempts + 1):
                db.session.add(WebhookAttempt(delivery_id=delivery_id, number=number, url=endpoint.url,
                                              attempted_at=_days_ago(clock, age), duration_ms=5))

        event("evt_old_delivered", 120)
        delivery("whd_old_delivered", "evt_old_delivered", 120, "delivered", attempts=2)
        event("evt_old_dead", 95)
        delivery("whd_old_dead", "evt_old_dead", 95, "dead", attempts=8)
        event("evt_old_unsent", 100)
        delivery("whd_old_unsent", "evt_old_unsent", 100, "retry_scheduled", attempts=1)  # never lost
        event("evt_recent_delivery", 80)
        delivery("whd_recent", "evt_recent_delivery", 80, "delivered", attempts=1)
        event("evt_old_alone", 61)  # past the feed's 30 days plus 30
        event("evt_keep_alone", 59)
        for message_id, age, status in (("msg_old_sent", 401, "sent"), ("msg_old_failed", 450, "failed"),
                                        ("msg_old_queued", 500, "retry_scheduled"),  # still to send: kept
                                        ("msg_recent", 10, "sent")):
            db.session.add(Message(id=message_id, institution_id=institution.id, channel="email",
                                   recipient="a@example.rw", template="decision", language="en", body_text="…",
                                   status=status, created_at=_days_ago(clock, age)))
        db.session.add(VerificationCharge(institution_id=institution.id, actor="key", issuer="nesa", level="a",
                                          outcome="authentic", amount=Decimal("1.50"), currency="USD",
                                          identifiers_hash="h" * 64, period="2020-01",
                                          created_at=_days_ago(clock, 2000)))
        db.session.commit()
    return institution


def _state(app) -> dict:
    with app.app_context():
        state = {
            "audit": sorted(db.session.scalars(select(AuditLog.action))),
            "deliveries": sorted(db.session.scalars(select(WebhookDelivery.id))),
            "attempts": db.session.scalar(select(func.count()).select_from(WebhookAttempt)),
            "events": sorted(db.session.scalars(select(Event.id))),
            "charges": db.session.scalar(select(func.count()).select_from(VerificationCharge)),
            "messages": sorted(db.session.scalars(select(Message.id))),
        }
        db.session.rollback()
        return state


def test_dry_run_counts_and_deletes_nothing(app, history):
    before = _state(app)
    result = app.test_cli_runner().invoke(args=["retention", "run", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["dry_run"] is True
    assert {kind["kind"]: kind["deleted"] for kind in report["kinds"]} == {
        "audit_log": 3, "webhook_deliveries": 2, "events": 1, "messages": 2, "idempotency_keys": 0}
    assert _state(app) == before


def test_run_deletes_expired_rows_in_batches_and_keeps_the_rest(app, history, clock, monkeypatch):
    monkeypatch.setitem(app.config, "RETENTION_BATCH_SIZE", 2)
    result = app.test_cli_runner().invoke(args=["retention", "run", "--json"])
    assert result.exit_code == 0, result.output
    report = {kind["kind"]: kind for kind in json.loads(result.output)["kinds"]}
    assert report["audit_log"]["deleted"] == 3
    assert report["webhook_deliveries"]["deleted"] == 2
    assert report["webhook_deliveries"]["dependants_deleted"] == {"webhook_attempts": 10}
    # Deliveries go before events, so events whose deliveries just went are free in the same pass.
    assert report["events"]["deleted"] == 3

    state = _state(app)
    assert state["audit"] == ["audit-keep"]
    assert state["deliveries"] == ["whd_old_unsent", "whd_recent"]
    assert state["attempts"] == 2
    assert state["events"] == ["evt_keep_alone", "evt_old_unsent", "evt_recent_delivery"]
    assert state["charges"] == 1  # the billing ledger is never deleted
    assert state["messages"] == ["msg_old_queued", "msg_recent"]

    # Time passes: what was kept expires in its turn.
    clock.advance(timedelta(days=3))
    app.test_cli_runner().invoke(args=["retention", "run"])
    state = _state(app)
    assert state["audit"] == [] and state["events"] == ["evt_old_unsent", "evt_recent_delivery"]
    assert state["charges"] == 1


def test_retention_settings_are_honoured(app, history, monkeypatch):
    monkeypatch.setitem(app.config, "RETENTION_AUDIT_DAYS", 450)
    monkeypatch.setitem(app.config, "RETENTION_WEBHOOK_DAYS", 110)
    monkeypatch.setitem(app.config, "EVENTS_RETENTION_DAYS", 60)
    monkeypatch.setitem(app.config, "RETENTION_MESSAGES_DAYS", 420)
    result = app.test_cli_runner().invoke(args=["retention", "run", "--json"])
    report = {kind["kind"]: kind["deleted"] for kind in json.loads(result.output)["kinds"]}
    # 500-day audit, 120-day delivery, 450-day failed message
    assert report == {"audit_log": 1, "webhook_deliveries": 1, "events": 1, "messages": 1, "idempotency_keys": 0}
    assert "audit-old-1" in _state(app)["audit"]


def test_daily_job_purges_and_keeps_one_chain(app, history, redis_client):
    redis_client.delete(retention_job.CHAIN_KEY)
    with app.app_context():
        assert retention_job.ensure_purge_scheduled() is True
        assert retention_job.ensure_purge_scheduled() is False  # one chain, however many workers ask
        summary = retention_job.purge()
        assert summary == {"audit_log": 3, "webhook_deliveries": 2, "events": 3, "messages": 2, "idempotency_keys": 0}
        next_id = redis_connection().get(retention_job.CHAIN_KEY).decode()
        from rq.job import Job
        scheduled = Job.fetch(next_id, connection=redis_connection())
        assert scheduled.func_name == "jobs.retention.purge"
        scheduled.delete()
    redis_client.delete(retention_job.CHAIN_KEY)


def test_a_chain_whose_purge_failed_is_started_again(app, redis_client):
    """RQ keeps a failed job for a day; the chain must not count as alive because its job still exists."""
    redis_client.delete(retention_job.CHAIN_KEY)
    with app.app_context():
        assert retention_job.ensure_purge_scheduled() is True
        from rq.job import Job
        failed = Job.fetch(redis_connection().get(retention_job.CHAIN_KEY).decode(), connection=redis_connection())
        failed.set_status("failed")
        assert Job.exists(failed.id, connection=redis_connection())
        assert retention_job.ensure_purge_scheduled() is True  # a new chain, not a day without purges
        assert redis_connection().get(retention_job.CHAIN_KEY).decode() != failed.id
        Job.fetch(redis_connection().get(retention_job.CHAIN_KEY).decode(), connection=redis_connection()).delete()
        failed.delete()
    redis_client.delete(retention_job.CHAIN_KEY)
