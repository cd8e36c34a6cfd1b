"""Queries that every request repeats are planned once per connection on PostgreSQL, and ending read-only
transactions with COMMIT (which keeps psycopg's prepared statements) never keeps a write that was meant to be
rolled back; the search's "leave out erased applicants" condition has an index of its own."""
from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select, text

from core.db import db, note_write
from core.models import Institution
from tests.conftest import TEST_DB, auth_header

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="prepared statements and their plans are PostgreSQL's")

LIST_STATEMENT_START = "SELECT applications.id, applications.reference, applications.applicant_id"


def _prepared_list_statements(app) -> list[tuple[str, int, int]]:
    """(statement, generic plans, custom plans) of the list statement on each pooled connection."""
    found = []
    with app.app_context():
        for _ in range(db.engine.pool.size() + db.engine.pool.overflow() + 2):
            with db.engine.connect() as connection:
                found.extend(connection.execute(
                    text("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements "
                         "WHERE statement LIKE :start"), {"start": LIST_STATEMENT_START + "%"}).all())
    return found


def test_the_list_query_is_planned_once_per_connection_not_on_every_request(app, client, factory):
    institution = factory.institution()
    for _ in range(3):
        factory.application(institution)
    _, raw_key = factory.api_key(institution)
    with app.app_context():
        # Statistics of these rows, as autovacuum keeps them: left to chance, they may date from an earlier test's
        # rows of other institutions, which make a custom plan for this one look cheaper every time.
        db.session.execute(text("ANALYZE applications"))
        db.session.commit()
        # A fresh pool, as a new server process has: earlier tests' concurrent requests may have left many
        # connections in it, and 40 requests taken in turn by each would not reach the generic plan on any.
        db.engine.dispose()
    for _ in range(40):
        response = client.get("/api/v1/applications?limit=2", headers=auth_header(raw_key))
        assert response.status_code == 200 and len(response.get_json()["data"]) == 2

    plans = _prepared_list_statements(app)
    # Prepared at all: no ROLLBACK at the end of a request wiped psycopg's statements.
    assert plans, "the list statement was never prepared"
    # The limit (2 and the look-ahead row) is in the text: with `LIMIT $n` PostgreSQL's generic plan must guess
    # the row count, loses to a fresh plan on a large table, and the query is planned on every request.
    # (Pooled connections may also hold statements of earlier tests, with other limits.)
    assert not any(re.search(r"LIMIT \$\d+", statement) for statement, _, _ in plans), plans
    ours = [(statement, generic) for statement, generic, _ in plans if statement.rstrip().endswith("LIMIT 3")]
    assert ours, plans
    assert any(generic > 0 for _, generic in ours), f"planned on every request: {ours}"


def test_a_transaction_that_wrote_is_still_rolled_back(app, factory):
    institution = factory.institution()
    with app.app_context():
        db.session.get(Institution, institution.id).name = "Renamed, then rolled back"
        db.session.flush()
        db.session.rollback()
        assert db.session.get(Institution, institution.id).name != "Renamed, then rolled back"


def test_a_write_past_sqlalchemy_marked_as_such_is_still_rolled_back(app, factory):
    institution = factory.institution()
    with app.app_context():
        connection = db.session.connection()
        note_write(connection)
        with connection.connection.driver_connection.cursor() as cursor:
            cursor.execute("UPDATE institutions SET name = 'Written by the driver' WHERE id = %s", (institution.id,))
        db.session.rollback()
        assert db.session.scalar(select(func.count()).select_from(Institution)
                                 .where(Institution.name == "Written by the driver")) == 0


def test_a_failed_transaction_is_rolled_back_and_the_connection_stays_usable(app, factory):
    institution = factory.institution()
    with app.app_context():
        with pytest.raises(Exception):
            db.session.execute(text("SELECT 1 / 0"))
        db.session.rollback()
        assert db.session.scalar(select(Institution.id).where(Institution.id == institution.id)) == institution.id


def test_leaving_out_erased_applicants_reads_only_the_erased(app, factory):
    """Search and exports leave out erased applicants (`not_erased`): the partial index of migration 0018 answers
    that from the erased rows alone. Without it, PostgreSQL read every applicant of a million on each search
    page (150 of 200 ms), or at best every applicant of the institution through its institution index."""
    from core.applications.listing.statements import filtered_applications
    from core.scoping import InstitutionScope

    institution = factory.institution()
    factory.application(institution)
    with app.app_context():
        # Enough applicants (none erased) that reading them all costs more than the erased ones' index.
        db.session.execute(text(
            "INSERT INTO applicants (id, institution_id, first_name, last_name, email, search_text, created_at) "
            "SELECT 'apl_plan' || n, :institution, 'Plan', 'Test', 'plan' || n || '@example.rw', "
            "'plan test plan' || n || '@example.rw', now() FROM generate_series(1, 5000) AS n"),
            {"institution": institution.id})
        db.session.execute(text("ANALYZE applicants"))
        statement = filtered_applications(InstitutionScope(institution.id), {"q": "uwase"})
        compiled = statement.compile(db.engine, compile_kwargs={"literal_binds": True})
        plan = "\n".join(row[0] for row in db.session.execute(text(f"EXPLAIN {compiled}")))
        db.session.rollback()
    assert "ix_applicants_inst_erased" in plan, plan
