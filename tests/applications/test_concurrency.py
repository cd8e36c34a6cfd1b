"""Two OS processes PATCH the same applications at once against the real PostgreSQL.

Each process runs its own app (own connection pool) and sends its batches as fast
as it can. Both write `decision` with `send_decision`, with values that collide;
one also writes `stage`, the other `enrolled`. If a batch read a row without
locking it, a change could be decided on a stale value: a decision recorded and
sent twice in a row, or a decision row that is not the application's decision.
"""
from __future__ import annotations

import multiprocessing
import os
from itertools import groupby, pairwise

import pytest
from flask_migrate import upgrade
from sqlalchemy import select

from core.db import db
from core.models import Application, Decision, Event
from tests.api.bulk.conftest import make_school
from tests.conftest import (
    POSTGRES_ADMIN_URL,
    _create_postgres_database,
    _drop_postgres_database,
    app_config,
    auth_header,
)
from tests.factories import Factory
from wsgi import create_app

ROUNDS = 30
APPLICATIONS = 20


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    """A private PostgreSQL database, whatever KARIBU_TEST_DB says: row locks are what is tested."""
    name = _create_postgres_database()
    url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    config = app_config(url, tmp_path_factory.mktemp("documents"))
    app = create_app(config)
    with app.app_context():
        upgrade(directory=os.path.join(app.root_path, "migrations"))
    yield app, config
    with app.app_context():
        db.engine.dispose()
    _drop_postgres_database(name)


def first_process_batch(ids: list[str], stages: list[str], turn: int) -> dict:
    return {"updates": [
        {"id": i, "stage": stages[turn % len(stages)], "decision": ("accepted", "rejected")[turn % 2],
         "send_decision": True} for i in ids]}


def second_process_batch(ids: list[str], turn: int) -> dict:
    return {"updates": [
        {"id": i, "enrolled": bool(turn % 2), "decision": ("rejected", "accepted")[turn % 2],
         "send_decision": True} for i in reversed(ids)]}


def run_batches(config: dict, raw_key: str, batches: list[dict], barrier, results) -> None:
    """Body of each child process: its own app, its own connections, as fast as it can."""
    client = create_app(config).test_client()
    statuses = []
    barrier.wait(timeout=60)
    for body in batches:
        response = client.patch("/api/v1/applications/update", json=body, headers=auth_header(raw_key))
        statuses.append(response.status_code)
    results.put(statuses)


def test_two_processes_updating_the_same_rows_lose_nothing(postgres):
    app, config = postgres
    school = make_school(Factory(app), applications=APPLICATIONS)
    plans = [
        [first_process_batch(school.ids, school.stages, turn) for turn in range(ROUNDS)],
        [second_process_batch(school.ids, turn) for turn in range(ROUNDS)],
    ]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(plans))
    results = context.Queue()
    processes = [context.Process(target=run_batches, args=(config, school.raw_key, plan, barrier, results))
                 for plan in plans]
    for process in processes:
        process.start()
    statuses = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0

    assert statuses == [[200] * ROUNDS, [200] * ROUNDS]
    last = ROUNDS - 1
    with app.app_context():
        applications = db.session.scalars(
            select(Application).where(Application.id.in_(school.ids))).all()
        decisions = db.session.scalars(
            select(Decision).order_by(Decision.application_id, Decision.created_at)).all()
        events = db.session.scalars(
            select(Event).where(Event.type == "decision.sent").order_by(Event.occurred_at)).all()
    assert {a.stage for a in applications} == {school.stages[last % len(school.stages)]}
    assert {a.enrolled for a in applications} == {bool(last % 2)}
    history = {key: list(rows) for key, rows in groupby(decisions, key=lambda d: d.application_id)}
    sent_statuses = {}
    for event in events:
        sent_statuses.setdefault(event.payload["submission_id"], []).append(event.payload["decision_status"])
    for application in applications:
        statuses_in_order = [d.status for d in history[application.id]]
        assert all(a != b for a, b in pairwise(statuses_in_order)), statuses_in_order
        assert statuses_in_order[-1] == application.decision
        assert all(d.sent_at is not None for d in history[application.id])
        assert sent_statuses[application.id] == statuses_in_order
