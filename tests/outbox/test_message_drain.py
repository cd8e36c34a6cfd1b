"""The message drain on the shared outbox engine (core/outbox): sends that could outlive their lease."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta

from core.messages.delivery import LEASE, drain_due_messages
from core.messages.runtime import runtime
from core.models import utcnow
from tests.messages.conftest import all_messages, drain_now, send_decisions
from tests.messages.test_outbox import _setup
from tests.webhooks.conftest import ManualClock


class LateSenders(ManualClock):
    """While `late`, every time a sender thread asks the time (as it starts a send) the clock moves on by `step`:
    the send would start just when its lease could lapse before the send ends."""

    def __init__(self, start: datetime, step: timedelta):
        super().__init__(start)
        self.step, self.late = step, True

    def now(self) -> datetime:
        if self.late and threading.current_thread() is not threading.main_thread():
            self.advance(self.step)
        return self.current


def test_a_send_that_could_outlive_its_lease_is_not_started_and_its_lease_is_released(mail_app, smtp, factory,
                                                                                        monkeypatch):
    mail_timeout = mail_app.config["MAIL_TIMEOUT"]  # a send starts with two MAIL_TIMEOUTs of its lease left
    clock = LateSenders(utcnow(), LEASE - timedelta(seconds=2 * mail_timeout - 1))
    monkeypatch.setattr(runtime, "clock", clock)
    _, key, [application] = _setup(factory)
    send_decisions(mail_app.test_client(), key, [application.id])

    with mail_app.app_context():
        result = drain_due_messages(time_budget=1.0)
    assert result.attempts == [] and smtp.received == []
    [message] = all_messages(mail_app)
    # not an attempt, and not left leased: the next drain may take it at once
    assert (message.status, message.attempts, message.lease_token, message.lease_expires_at) == (
        "queued", 0, None, None)

    clock.late = False
    drain_now(mail_app)
    [message] = all_messages(mail_app)
    assert (message.status, message.attempts) == ("sent", 1) and len(smtp.received) == 1
