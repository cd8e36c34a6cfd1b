"""Migration 0028 converts a database with rows in several months to monthly partitions without losing a row, and
its downgrade brings back the plain tables with the same rows, also while another connection writes; a run cut
short or failed leaves nothing behind."""
from __future__ import annotations

import itertools
import random
import threading

import psycopg
from sqlalchemy import create_engine, make_url, text

from tests.ops.test_migrations import empty_database, flask_command
from tests.partitions.conftest import ONLY_ON_POSTGRES

pytestmark = ONLY_ON_POSTGRES
BEFORE = "0027_application_reference"
MONTHS = ("2025-11-15", "2025-12-31 23:59:59", "2026-01-01", "2026-03-10")
ROWS_PER_MONTH = 50

SEED = f"""
INSERT INTO institutions (id, name, status, created_at) VALUES ('ins_conversion', 'Conversion', 'active', now());
INSERT INTO webhook_endpoints (id, institution_id, url, event_types, include_applicant_name, enabled,
    consecutive_failures, secret_ciphertext, secret_rotated_at, created_at, updated_at)
    VALUES ('whe_conversion', 'ins_conversion', 'https://h.test/', '[]', false, true, 0, 'x', now(), now(), now());
INSERT INTO audit_log (created_at, request_id, actor, source, action, target, method, path, query, status,
    duration_ms, client_ip, user_agent)
    SELECT moment + n * interval '1 second', 'r', '', 'api', 'seeded', '', 'GET', '/', '', 200, 1, '', ''
    FROM unnest(CAST(:months AS timestamp[])) AS moment, generate_series(0, {ROWS_PER_MONTH} - 1) AS n;
INSERT INTO events (id, institution_id, type, occurred_at, payload)
    SELECT 'evt_' || row_number() OVER (), 'ins_conversion', 'payment.completed', moment + n * interval '1 second', '{{}}'
    FROM unnest(CAST(:months AS timestamp[])) AS moment, generate_series(0, {ROWS_PER_MONTH} - 1) AS n;
INSERT INTO webhook_deliveries (id, institution_id, endpoint_id, event_id, event_type, status, attempts, created_at,
    updated_at) SELECT 'whd_' || substr(id, 5), 'ins_conversion', 'whe_conversion', id, type, 'delivered', 1,
    occurred_at, occurred_at FROM events;
INSERT INTO webhook_attempts (id, delivery_id, number, url, attempted_at, duration_ms)
    SELECT 'wha_' || substr(id, 5), id, 1, 'https://h.test/', created_at, 5 FROM webhook_deliveries;
"""


def _state(engine) -> dict:
    with engine.connect() as connection:
        counts = {table: connection.scalar(text(f"SELECT count(*) FROM {table}"))
                  for table in ("audit_log", "events", "webhook_attempts", "webhook_deliveries")}
        kinds = dict(connection.execute(text(
            "SELECT relname, relkind FROM pg_class WHERE relname IN ('audit_log', 'events', 'webhook_attempts')")).all())
        placed = dict(connection.execute(text(
            "SELECT tableoid::regclass::text, count(*) FROM audit_log GROUP BY 1")).all())
        # the feed's numbering survives the copy
        seq_check = connection.scalar(text("SELECT count(DISTINCT seq) FROM events"))
    return {"counts": counts, "kinds": kinds, "placed": placed, "distinct_seq": seq_check}


def _seed(connection) -> None:
    """ROWS_PER_MONTH rows of each growing table (and their deliveries) in every one of MONTHS."""
    for statement in filter(str.strip, SEED.split(";")):
        connection.execute(text(statement), {"months": list(MONTHS)})


def test_conversion_keeps_every_row_and_downgrade_brings_plain_tables_back(tmp_path):
    with empty_database(tmp_path) as url:
        assert flask_command(url, "db", "upgrade", BEFORE).returncode == 0
        engine = create_engine(url)
        try:
            with engine.begin() as connection:
                _seed(connection)
            before = _state(engine)
            assert before["counts"] == dict.fromkeys(
                ("audit_log", "events", "webhook_attempts", "webhook_deliveries"), len(MONTHS) * ROWS_PER_MONTH)
            assert before["kinds"] == dict.fromkeys(("audit_log", "events", "webhook_attempts"), "r")

            upgraded = flask_command(url, "db", "upgrade")
            assert upgraded.returncode == 0, upgraded.stderr
            after = _state(engine)
            assert after["counts"] == before["counts"]
            assert after["kinds"] == dict.fromkeys(("audit_log", "events", "webhook_attempts"), "p")
            assert after["distinct_seq"] == before["distinct_seq"] == len(MONTHS) * ROWS_PER_MONTH
            # one partition per month with rows: the last second of December stays in December
            assert after["placed"] == {
                "audit_log_p2025_11": 50, "audit_log_p2025_12": 1, "audit_log_p2026_01": 99,
                "audit_log_p2026_03": 50}
            with engine.begin() as connection:  # the sequences and defaults still number new rows
                connection.execute(text(
                    "INSERT INTO audit_log (created_at, request_id, actor, source, action, target, method, path,"
                    " query, status, duration_ms, client_ip, user_agent) VALUES (now() AT TIME ZONE 'UTC', 'n', '',"
                    " 'api', 'new', '', 'GET', '/', '', 200, 1, '', '')"))
                connection.execute(text("INSERT INTO events (id, institution_id, type, occurred_at, payload)"
                                        " VALUES ('evt_new', 'ins_conversion', 'x', now() AT TIME ZONE 'UTC', '{}')"))
                assert connection.scalar(text("SELECT seq FROM events WHERE id = 'evt_new'")) > len(MONTHS) * ROWS_PER_MONTH

            downgraded = flask_command(url, "db", "downgrade", BEFORE)
            assert downgraded.returncode == 0, downgraded.stderr
            back = _state(engine)
            expected = {**before["counts"], "audit_log": before["counts"]["audit_log"] + 1,
                        "events": before["counts"]["events"] + 1}
            assert back["counts"] == expected
            assert back["kinds"] == before["kinds"]
            with engine.connect() as connection:  # the foreign key into events is back
                assert connection.scalar(text(
                    "SELECT count(*) FROM pg_constraint WHERE conname = 'fk_webhook_deliveries_event_id_events'")) == 1
        finally:
            engine.dispose()


LIVE_INSERT = (
    "INSERT INTO audit_log (created_at, request_id, actor, source, action, target, method, path, query, status,"
    " duration_ms, client_ip, user_agent) VALUES ((now() AT TIME ZONE 'UTC'), 'live', '', 'api', 'inserted', '',"
    " 'GET', '/', '', 200, 1, '', '') RETURNING id, created_at, action")


class LiveWriter(threading.Thread):
    """Inserts, updates, moves to another month and deletes its own audit rows one statement at a time (each its
    own transaction) and keeps what the table must hold; counts the writes made while the change log existed."""

    def __init__(self, url: str, rows: dict):
        super().__init__(daemon=True)
        self.url, self.rows, self.logged_writes, self.errors = url, rows, 0, []
        self.stop = threading.Event()

    def run(self):
        chance = random.Random(43)
        with psycopg.connect(self.url, autocommit=True, prepare_threshold=None) as connection:
            for step in itertools.count():
                if self.stop.is_set():
                    return
                logged = connection.execute("SELECT to_regclass('audit_log__changes') IS NOT NULL").fetchone()[0]
                try:
                    self._write(connection, (0, 1, 0, 2, 3)[step % 5], chance)  # the live rows grow
                except psycopg.Error as error:
                    self.errors.append(str(error))
                    return
                self.logged_writes += logged

    def _write(self, connection, kind: int, chance: random.Random) -> None:
        if kind == 0 or len(self.rows) < 3:
            row_id, created_at, action = connection.execute(LIVE_INSERT).fetchone()
            self.rows[row_id] = (created_at, action)
            return
        row_id = chance.choice(sorted(self.rows))
        if kind == 1:
            self.rows[row_id] = connection.execute(
                "UPDATE audit_log SET action = 'updated ' || id WHERE id = %s RETURNING created_at, action",
                (row_id,)).fetchone()
        elif kind == 2:  # another month: another partition, another key
            self.rows[row_id] = connection.execute(
                "UPDATE audit_log SET created_at = created_at - interval '40 days' WHERE id = %s"
                " RETURNING created_at, action", (row_id,)).fetchone()
        else:
            connection.execute("DELETE FROM audit_log WHERE id = %s", (row_id,))
            del self.rows[row_id]


def _live_rows(engine) -> dict:
    with engine.connect() as connection:
        return {row_id: (created_at, action) for row_id, created_at, action in connection.execute(text(
            "SELECT id, created_at, action FROM audit_log WHERE request_id = 'live'"))}


def _migrate_while_writing(engine, url: str, rows: dict, *args: str) -> LiveWriter:
    writer = LiveWriter(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False), rows)
    writer.start()
    try:
        migrated = flask_command(url, "db", *args)
    finally:
        writer.stop.set()
        writer.join()
    assert migrated.returncode == 0, migrated.stderr
    return writer


def test_rows_written_updated_and_deleted_during_the_conversion_all_end_up_right(tmp_path):
    with empty_database(tmp_path) as url:
        assert flask_command(url, "db", "upgrade", BEFORE).returncode == 0
        engine = create_engine(url)
        try:
            with engine.begin() as connection:  # enough rows that the copy takes a while
                connection.execute(text(
                    "INSERT INTO audit_log (created_at, request_id, actor, source, action, target, method, path,"
                    " query, status, duration_ms, client_ip, user_agent) SELECT (now() AT TIME ZONE 'UTC')"
                    " - n * interval '1 minute', 'seeded', '', 'api', 'seeded', '', 'GET', '/', '', 200, 1, '', ''"
                    " FROM generate_series(1, 200000) AS n"))
            rows: dict = {}
            for args in (("upgrade",), ("downgrade", BEFORE)):
                writer = _migrate_while_writing(engine, url, rows, *args)
                assert writer.errors == []
                assert writer.logged_writes > 0  # some writes fell between the change log's start and the swap
                assert _live_rows(engine) == rows
                with engine.connect() as connection:
                    seeded = connection.scalar(text("SELECT count(*) FROM audit_log WHERE request_id = 'seeded'"))
                    assert seeded == 200000
                    assert connection.scalar(text(  # nothing of the rebuild left
                        "SELECT to_regclass('audit_log__changes') IS NULL AND to_regclass('audit_log__rebuilt') IS NULL"
                        " AND NOT EXISTS (SELECT FROM pg_trigger WHERE tgname LIKE '%capture')"))
        finally:
            engine.dispose()


def _leftovers(engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(text(
            "SELECT relname FROM pg_class WHERE relname LIKE '%\\_\\_changes' OR relname LIKE '%\\_\\_rebuilt'"
            " UNION ALL SELECT tgname FROM pg_trigger WHERE tgname LIKE '%\\_\\_capture'"
            " UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE '%\\_\\_capture'")))


def test_a_run_cut_short_or_failed_leaves_nothing_the_next_run_trips_on(tmp_path):
    with empty_database(tmp_path) as url:
        assert flask_command(url, "db", "upgrade", BEFORE).returncode == 0
        engine = create_engine(url)
        try:
            with engine.begin() as connection:
                _seed(connection)
                # What a run killed during the audit log's copy leaves: the copy, the change log and its trigger.
                connection.execute(text("CREATE TABLE audit_log__rebuilt (LIKE audit_log)"))
                connection.execute(text("CREATE TABLE audit_log__changes (LIKE audit_log)"))
                connection.execute(text("CREATE FUNCTION audit_log__capture() RETURNS trigger LANGUAGE plpgsql"
                                        " AS $$ BEGIN RETURN NULL; END $$"))
                connection.execute(text("CREATE TRIGGER audit_log__capture AFTER INSERT ON audit_log"
                                        " FOR EACH ROW EXECUTE FUNCTION audit_log__capture()"))
                # A table in the way of the events' first partition: this run fails there.
                connection.execute(text("CREATE TABLE events_p2025_11 (id text)"))
            before = _state(engine)

            failed = flask_command(url, "db", "upgrade")
            assert failed.returncode != 0 and "events_p2025_11" in failed.stderr
            assert _leftovers(engine) == []
            assert _state(engine)["kinds"] == {"audit_log": "p", "webhook_attempts": "p", "events": "r"}
            with engine.begin() as connection:  # the events stay writable
                connection.execute(text("INSERT INTO events (id, institution_id, type, occurred_at, payload)"
                                        " VALUES ('evt_after', 'ins_conversion', 'x', now() AT TIME ZONE 'UTC', '{}')"))
                connection.execute(text("DROP TABLE events_p2025_11"))

            upgraded = flask_command(url, "db", "upgrade")
            assert upgraded.returncode == 0, upgraded.stderr
            after = _state(engine)
            assert after["kinds"] == dict.fromkeys(("audit_log", "events", "webhook_attempts"), "p")
            assert after["counts"] == {**before["counts"], "events": before["counts"]["events"] + 1}
            assert _leftovers(engine) == []
        finally:
            engine.dispose()
