"""The growing tables' monthly partitions seen from outside (PostgreSQL's catalog): partitioned by range, made
ahead by the daily job, rows in their month's partition across a boundary, the DEFAULT partition as a net."""
from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import text

from core.db import db
from core.models import AuditLog, Event
from core.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from tests.partitions.conftest import ONLY_ON_POSTGRES, run_the_daily_job, use_clock

pytestmark = ONLY_ON_POSTGRES

GROWING = {"audit_log": "created_at", "webhook_attempts": "attempted_at", "events": "occurred_at"}


@pytest.fixture
def clock(monkeypatch):
    return use_clock(monkeypatch, datetime(2031, 1, 31, 23, 59, 59))


def _partition_bounds(table: str) -> dict[str, str]:
    rows = db.session.execute(text(
        "SELECT child.relname, pg_get_expr(child.relpartbound, child.oid) FROM pg_inherits"
        " JOIN pg_class child ON child.oid = pg_inherits.inhrelid WHERE inhparent = CAST(:table AS regclass)"),
        {"table": table})
    return dict(rows.all())


def test_the_growing_tables_are_partitioned_by_month_with_partitions_ahead(app, clock, redis_client):
    with app.app_context():
        made = run_the_daily_job(redis_client)
        assert made == {table: [f"{table}_p2031_01", f"{table}_p2031_02", f"{table}_p2031_03"] for table in GROWING}
        for table, column in GROWING.items():
            strategy, key = db.session.execute(text(
                "SELECT partstrat, pg_get_partkeydef(partrelid) FROM pg_partitioned_table"
                " WHERE partrelid = CAST(:table AS regclass)"), {"table": table}).one()
            assert (strategy, key) == ("r", f"RANGE ({column})")
            bounds = _partition_bounds(table)
            assert bounds[f"{table}_default"] == "DEFAULT"
            for month, following in (("2031-01", "2031-02"), ("2031-02", "2031-03"), ("2031-03", "2031-04")):
                assert bounds[f"{table}_p{month.replace('-', '_')}"] == (
                    f"FOR VALUES FROM ('{month}-01 00:00:00') TO ('{following}-01 00:00:00')")
            primary_key = db.session.scalar(text(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = CAST(:table AS regclass)"
                " AND contype = 'p'"), {"table": table})
            assert primary_key == f"PRIMARY KEY (id, {column})"
        assert run_the_daily_job(redis_client) == {}  # made once


def _where(table: str, row_id) -> str:
    return db.session.scalar(text(f"SELECT tableoid::regclass::text FROM {table} WHERE id = :id"), {"id": row_id})


def test_rows_land_in_their_month_across_a_boundary_and_the_default_catches_the_rest(app, factory, clock,
                                                                                       redis_client):
    institution = factory.institution()
    with app.app_context():
        run_the_daily_job(redis_client)
        last_moment, first_moment = datetime(2031, 1, 31, 23, 59, 59, 999999), datetime(2031, 2, 1)
        far = datetime(2035, 5, 17)  # no partition made that far ahead: the DEFAULT takes it, no insert fails
        endpoint = WebhookEndpoint(institution_id=institution.id, url="https://h.test/",
                                   event_types=["payment.completed"], secret_ciphertext="x")
        db.session.add(endpoint)
        audit, events, attempts = {}, {}, {}
        for moment in (last_moment, first_moment, far):
            row = AuditLog(created_at=moment, institution_id=institution.id, action="boundary")
            event = Event(institution_id=institution.id, type="payment.completed", occurred_at=moment, payload={})
            db.session.add_all([row, event])
            db.session.flush()
            delivery = WebhookDelivery(institution_id=institution.id, endpoint_id=endpoint.id, event_id=event.id,
                                       event_type="payment.completed", status="delivered")
            db.session.add(delivery)
            db.session.flush()
            attempt = WebhookAttempt(delivery_id=delivery.id, number=1, url=endpoint.url, attempted_at=moment,
                                     duration_ms=3)
            db.session.add(attempt)
            db.session.flush()
            audit[moment], events[moment], attempts[moment] = row.id, event.id, attempt.id
        db.session.commit()
        for table, ids in (("audit_log", audit), ("events", events), ("webhook_attempts", attempts)):
            assert _where(table, ids[last_moment]) == f"{table}_p2031_01"
            assert _where(table, ids[first_moment]) == f"{table}_p2031_02"
            assert _where(table, ids[far]) == f"{table}_default"
        db.session.rollback()

        assert run_the_daily_job(redis_client) == {table: [f"{table}_p2035_05"] for table in GROWING}
        for table, ids in (("audit_log", audit), ("events", events), ("webhook_attempts", attempts)):
            assert _where(table, ids[far]) == f"{table}_p2035_05"  # moved out of the net into its month
            assert db.session.scalar(text(f"SELECT count(*) FROM {table}_default")) == 0
            assert db.session.scalar(text(f"SELECT count(*) FROM {table}")) == 3
        # The ORM still reads a row by its id alone (the primary key in the database is (id, time)).
        assert db.session.get(Event, events[far]).occurred_at == far
        assert db.session.get(AuditLog, audit[first_moment]).created_at == first_moment
        _drop_partitions_made_here("2035_05")


def _drop_partitions_made_here(month: str) -> None:
    """Far-future partitions would catch the rows other tests expect in the DEFAULT partition."""
    db.session.rollback()
    for table in GROWING:
        db.session.execute(text(f"DROP TABLE IF EXISTS {table}_p{month}"))
    db.session.commit()
