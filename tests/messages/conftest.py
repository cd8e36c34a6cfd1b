"""Messages: a real SMTP server in the process, the app pointed at it, and helpers to run the worker."""
from __future__ import annotations

from datetime import timedelta

import pytest
from rq import Queue, SimpleWorker
from sqlalchemy import select

from core.db import db, redis_connection
from core.messages.runtime import runtime
from core.models import utcnow
from core.models.messages import Message
from tests.conftest import auth_header
from tests.messages.smtp_server import SmtpServer
from tests.webhooks.conftest import ManualClock


@pytest.fixture
def smtp():
    server = SmtpServer().start()
    yield server
    server.stop()


@pytest.fixture
def clock(monkeypatch):
    manual = ManualClock(utcnow())
    monkeypatch.setattr(runtime, "clock", manual)
    return manual


@pytest.fixture
def mail_app(app, smtp, redis_client, monkeypatch):
    """The app sending email to the in-process SMTP server; Redis queues start empty."""
    monkeypatch.setitem(app.config, "MAIL_SERVER", "127.0.0.1")
    monkeypatch.setitem(app.config, "MAIL_PORT", smtp.port)
    monkeypatch.setitem(app.config, "MAIL_DEFAULT_SENDER", "Admissions <admissions@karibu.test>")
    monkeypatch.setitem(app.config, "MAIL_TIMEOUT", 5.0)
    redis_client.flushdb()
    yield app
    redis_client.flushdb()


def run_message_worker(app) -> None:
    """Run every queued message job in this process (RQ SimpleWorker, burst mode)."""
    with app.app_context():
        connection = redis_connection()
        SimpleWorker([Queue("messages", connection=connection)], connection=connection).work(burst=True)


def drain_now(app):
    """One drain, without Redis (as a job would do it)."""
    from core.messages.delivery import drain_due_messages
    with app.app_context():
        return drain_due_messages()


def all_messages(app, **where) -> list[Message]:
    with app.app_context():
        query = select(Message).order_by(Message.created_at, Message.id)
        for name, value in where.items():
            query = query.where(getattr(Message, name) == value)
        rows = list(db.session.scalars(query))
        for row in rows:
            db.session.expunge(row)
        return rows


def send_decisions(client, key: str, application_ids: list[str], decision: str = "accepted"):
    body = {"updates": [{"id": app_id, "decision": decision, "send_decision": True} for app_id in application_ids]}
    return client.patch("/api/v1/applications/update", json=body, headers=auth_header(key))


def later(clock, minutes: float) -> None:
    clock.advance(timedelta(minutes=minutes))
