"""Ten identical PATCHes with `send_decision`, sent at once to a live threaded server: each application's
decision is recorded and sent exactly once, on SQLite (BEGIN IMMEDIATE) as on PostgreSQL (row locks)."""
from __future__ import annotations

import threading
from collections import Counter

import pytest
import requests
from sqlalchemy import select

from core.db import db
from core.models import Decision, Event
from tests.api.bulk.conftest import make_school
from tests.factories import Factory
from tests.live_server import base_url, serving

CONCURRENT_REQUESTS = 10
APPLICATIONS = 5


@pytest.fixture
def live_server(app):
    with serving(app) as server:
        yield base_url(server)


def test_identical_concurrent_patches_send_each_decision_once(app, live_server):
    school = make_school(Factory(app), applications=APPLICATIONS)
    body = {"updates": [{"id": i, "decision": "accepted", "send_decision": True} for i in school.ids]}
    barrier = threading.Barrier(CONCURRENT_REQUESTS)
    statuses: list[int] = []

    def send() -> None:
        with requests.Session() as session:
            barrier.wait(timeout=30)
            response = session.patch(f"{live_server}/api/v1/applications/update", json=body,
                                     headers=school.headers, timeout=60)
            statuses.append(response.status_code)

    threads = [threading.Thread(target=send) for _ in range(CONCURRENT_REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert statuses == [200] * CONCURRENT_REQUESTS
    with app.app_context():
        decisions = db.session.scalars(select(Decision).where(Decision.application_id.in_(school.ids))).all()
        sent = db.session.scalars(select(Event.subject_id).where(
            Event.institution_id == school.institution.id, Event.type == "decision.sent")).all()
        assert Counter(d.application_id for d in decisions) == Counter(school.ids)  # no duplicate rows
        assert all(d.status == "accepted" and d.sent_at is not None for d in decisions)
        assert Counter(sent) == Counter(school.ids)  # one decision.sent per application
