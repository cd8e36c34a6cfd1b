"""The feed under concurrent writers: a poller that keeps its cursor sees every event exactly once, in order.

Writers hold their transactions open for random times after writing their first event, so transactions
commit out of the order in which they got their sequence numbers: a feed paging by sequence number alone
would step past events that commit later with lower numbers. PostgreSQL only: SQLite serialises writers.
"""
from __future__ import annotations

import random
import threading
import time

import pytest
from sqlalchemy import select

from core.events import emission
from core.db import db
from core.models import Event
from core.scoping import InstitutionScope
from tests.conftest import TEST_DB
from tests.events.conftest import FEED

WRITERS = 6
TRANSACTIONS_PER_WRITER = 12
# Enough time for every writer to finish, plus what other sessions' transactions may hold the feed back.
DRAIN_PATIENCE_SECONDS = 120

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="SQLite serialises writers; nothing to race")


def _writer(app, institution_id: str, seed: int, committed: list, failures: list) -> None:
    rng = random.Random(seed)
    try:
        for _ in range(TRANSACTIONS_PER_WRITER):
            with app.app_context():
                written = []
                for _ in range(rng.randint(1, 3)):
                    written.append(emission.emit_webhook_test(InstitutionScope(institution_id)))
                    db.session.flush()  # the row (and its sequence number) exists from here on
                    time.sleep(rng.uniform(0, 0.03))
                if rng.random() < 0.15:
                    db.session.rollback()  # rolled-back events never appear
                    continue
                time.sleep(rng.uniform(0, 0.05))
                db.session.commit()
                committed.extend(event.id for event in written)
    except Exception as error:  # reported by the test, which must not hang on a dead writer
        failures.append(error)


def test_a_poller_sees_every_event_once_and_in_order_while_writers_race(app, client, tenant):
    committed: list[str] = []
    failures: list[Exception] = []
    writers = [threading.Thread(target=_writer, args=(app, tenant.institution.id, seed, committed, failures))
               for seed in range(WRITERS)]
    for thread in writers:
        thread.start()

    seen: list[str] = []
    cursor, polls_while_writing = None, 0
    deadline = None
    while True:
        writing = any(thread.is_alive() for thread in writers)
        params = {"limit": "7", **({"cursor": cursor} if cursor else {})}
        response = client.get(FEED, query_string=params, headers=tenant.headers)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        seen.extend(item["event_id"] for item in body["data"])
        cursor = body["cursor"]
        polls_while_writing += writing
        if writing or body["has_next"]:
            continue
        if len(seen) >= len(committed):
            break
        deadline = deadline or time.monotonic() + DRAIN_PATIENCE_SECONDS
        assert time.monotonic() < deadline, f"the feed stopped at {len(seen)} of {len(committed)} events"
        time.sleep(0.05)

    assert not failures, failures
    assert polls_while_writing > WRITERS, "the poller must have read while the writers were writing"
    assert len(seen) == len(set(seen)), "an event was delivered twice"
    assert set(seen) == set(committed), "events were missed (or rolled-back ones shown)"
    with app.app_context():
        stored = list(db.session.scalars(select(Event.id).where(Event.institution_id == tenant.institution.id)
                                         .order_by(Event.xact_id, Event.seq)))
    assert seen == stored, "the poller saw the events in feed order"
    again, _ = _walk_from_start(client, tenant)
    assert again == seen, "a fresh walk gives the same sequence"


def test_events_wait_for_an_older_open_transaction_then_come_in_order(app, client, tenant, emit):
    """A transaction holds the lowest sequence number open while later ones commit: the feed shows none of
    the later events until it ends, then all of them, the held one first (it started first)."""
    flushed, release = threading.Event(), threading.Event()
    held: list[str] = []

    def slow_writer():
        with app.app_context():
            event = emission.emit_webhook_test(InstitutionScope(tenant.institution.id))
            db.session.flush()
            held.append(event.id)
            flushed.set()
            release.wait(30)
            db.session.commit()

    before = emit(tenant.institution, 1)
    thread = threading.Thread(target=slow_writer)
    thread.start()
    assert flushed.wait(30)
    later = emit(tenant.institution, 3)
    try:
        with app.app_context():
            seqs = dict(db.session.execute(select(Event.id, Event.seq).where(Event.id.in_(later))).all())
        first = client.get(FEED, headers=tenant.headers).get_json()
        assert [item["event_id"] for item in first["data"]] == before, "later commits wait for the open one"
    finally:
        release.set()
        thread.join()
    with app.app_context():
        held_seq = db.session.scalar(select(Event.seq).where(Event.id == held[0]))
    assert held_seq < min(seqs.values()), "the held event was numbered before the ones that committed first"
    rest = client.get(FEED, query_string={"cursor": first["cursor"]}, headers=tenant.headers).get_json()
    assert [item["event_id"] for item in rest["data"]] == [*held, *later]


def _walk_from_start(client, tenant) -> tuple[list[str], str | None]:
    seen, cursor = [], None
    while True:
        params = {"limit": "7", **({"cursor": cursor} if cursor else {})}
        body = client.get(FEED, query_string=params, headers=tenant.headers).get_json()
        seen.extend(item["event_id"] for item in body["data"])
        cursor = body["cursor"]
        if not body["has_next"]:
            return seen, cursor
