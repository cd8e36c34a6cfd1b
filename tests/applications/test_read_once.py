"""A list page read in one round trip (core.db.read_once, core.db.KeptSelect): on PostgreSQL its SELECT runs
outside a transaction, and the connection goes back to the pool in its usual mode (were it left in autocommit,
the next request's writes would each commit on their own). A read inside a transaction already open (a search,
with its statement timeout) stays in it. A kept statement run on the driver gives the rows SQLAlchemy gives."""
from __future__ import annotations

import psycopg
import pytest
from datetime import datetime
from decimal import Decimal

from sqlalchemy import bindparam, event, func, select, text

from core.applications.records import application_select
from core.db import KeptSelect, db, read_once
from core.models import Application
from core.scoping import InstitutionScope
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


def test_a_kept_select_on_the_driver_gives_sqlalchemys_rows(app, factory, tenant):
    """Every kind of value a record holds (text, None, booleans, timestamps, a Decimal), by position and by name."""
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle, phone=None, paid=True,
                        enrolled=True, submitted_at=datetime(2026, 3, 1, 8, 15, 0, 250))
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle, first_name="Éloïse",
                        submitted_at=datetime(2026, 3, 2))
    statement = application_select(InstitutionScope(tenant.institution.id)).where(
        Application.submitted_at >= bindparam("after", type_=Application.submitted_at.type)).order_by(
        Application.submitted_at)
    kept = KeptSelect(statement)
    with app.app_context():
        expected = db.session.execute(statement, {"after": datetime(2026, 1, 1)}).all()
        db.session.rollback()
        for _ in range(7):  # past psycopg's fifth run, when the statement becomes a prepared one
            rows = kept.rows({"after": datetime(2026, 1, 1)})
        assert not db.session().in_transaction()
        assert [tuple(row) for row in rows] == [tuple(row) for row in expected] and len(rows) == 2
        assert [row._asdict() for row in rows] == [row._asdict() for row in expected]
        assert rows[0].phone is None and rows[0].paid is True and isinstance(rows[0].amount, Decimal)
        assert rows[1].first_name == "Éloïse"
        assert [row.id for row in kept.rows({"after": datetime(2026, 3, 2)})] == [expected[1].id]


def test_a_kept_select_with_an_expanding_in_follows_each_runs_values(app, factory, tenant):
    made = [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle) for _ in range(3)]
    kept = KeptSelect(select(Application.id).where(Application.id.in_(bindparam("ids", expanding=True))))
    with app.app_context():
        assert {row.id for row in kept.rows({"ids": [made[0].id]})} == {made[0].id}
        assert {row.id for row in kept.rows({"ids": [made[1].id, made[2].id]})} == {made[1].id, made[2].id}


def test_a_kept_select_runs_inside_an_open_transaction(app, factory, tenant):
    kept = KeptSelect(select(func.current_setting("statement_timeout").label("timeout")))
    with app.app_context():
        assert kept.rows({})[0].timeout == "0"
        db.session.execute(text("SET LOCAL statement_timeout = 5000"))
        assert kept.rows({})[0].timeout == "5s"


def test_connections_dropped_under_a_kept_select_are_not_handed_out_again(app, factory, tenant):
    """The database restarted: the read that meets it fails (the API answers 503), and the next one works, however
    many dead connections the pool held."""
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    kept = KeptSelect(select(Application.id).where(Application.institution_id == tenant.institution.id))
    with app.app_context():
        engine = db.engine
        held = [engine.connect() for _ in range(3)]  # three connections in the pool once they are back
        for connection in held:
            connection.close()
        assert len(kept.rows({})) == 1
        with psycopg.connect(engine.url.set(drivername="postgresql").render_as_string(hide_password=False),
                             autocommit=True) as admin:
            dropped = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()[0]
        assert dropped >= 3
        with pytest.raises(psycopg.OperationalError):
            kept.rows({})
        assert len(kept.rows({})) == 1
        assert len(kept.rows({})) == 1


def test_a_kept_select_whose_names_cannot_be_attributes_runs_as_sqlalchemy_does(app, factory, tenant):
    application = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle)
    kept = KeptSelect(select(Application.id.label("_id"), Application.stage.label("class")).where(
        Application.institution_id == tenant.institution.id))
    with app.app_context():
        rows = kept.rows({})
        assert [(row._id, row[1]) for row in rows] == [(application.id, "submitted")]
