"""A list page read in one round trip (core.db.read_once): on PostgreSQL its SELECT runs outside a transaction,
and the connection goes back to the pool in its usual mode (were it left in autocommit, the next request's
writes would each commit on their own). A read inside a transaction already open (a search, with its statement
timeout) stays in it."""
from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import event, select, text

from core.db import db, read_once
from core.models import Application
from tests.conftest import TEST_DB

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="SQLite's plain reads take no transaction anyway")


@pytest.fixture
def returned_connections(app):
    """Whether each connection the app hands back to its pool during the test is in autocommit."""
    seen: list[bool] = []

    def on_checkin(dbapi_connection, _record):
        seen.append(dbapi_connection.autocommit)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "checkin", on_checkin)
    yield seen
    event.remove(engine, "checkin", on_checkin)


def transaction_status():
    return db.session.connection().connection.driver_connection.info.transaction_status


def test_a_page_read_alone_holds_no_transaction(app, factory, tenant):
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    with app.app_context():
        rows = read_once(select(Application.id).where(Application.institution_id == tenant.institution.id), {})
        assert len(rows) == 1
        assert transaction_status() == psycopg.pq.TransactionStatus.IDLE


def test_a_read_inside_an_open_transaction_stays_in_it(app, factory, tenant):
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    with app.app_context():
        db.session.execute(text("SET LOCAL statement_timeout = 5000"))
        rows = read_once(select(Application.id).where(Application.institution_id == tenant.institution.id), {})
        assert len(rows) == 1
        assert transaction_status() == psycopg.pq.TransactionStatus.INTRANS
        assert db.session.scalar(text("SHOW statement_timeout")) == "5s"


def test_list_and_by_id_hand_back_connections_in_transaction_mode(app, factory, tenant, api_get,
                                                                  returned_connections):
    application = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    assert api_get(tenant, "/api/v1/applications", {"limit": 10}).status_code == 200
    assert api_get(tenant, "/api/v1/applications/by-id", {"ids": application.id}).status_code == 200
    assert returned_connections, "no connection went back to the pool"
    assert not any(returned_connections), returned_connections
