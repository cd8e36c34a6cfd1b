"""Making a partition locks its whole table: behind a long reader it gives up after a short wait (no write queues
long behind it) and leaves the month to the next daily run."""
from __future__ import annotations

import logging
import threading
from datetime import datetime

import psycopg
from sqlalchemy import make_url, text

from core.db import db
from core.privacy.partitions import ensure_partitions
from tests.partitions.conftest import ONLY_ON_POSTGRES
from tests.partitions.test_retention_partitions import WRITE_BLOCK_LIMIT_SECONDS, AuditWriter

pytestmark = ONLY_ON_POSTGRES
FAR = datetime(2041, 6, 15)  # no partition of these months exists yet
FAR_MONTHS = ("2041_06", "2041_07", "2041_08")
READER_GIVES_UP_SECONDS = 10  # a bound for the test when the guard is broken: it fails rather than hangs


class LongReader(threading.Thread):
    """A transaction that read audit_log (holding its ACCESS SHARE lock) and stays open until released."""

    def __init__(self, database_url: str):
        super().__init__(daemon=True)
        self.url = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
        self.reading, self.release = threading.Event(), threading.Event()

    def run(self):
        with psycopg.connect(self.url) as connection:
            connection.execute("SELECT count(*) FROM audit_log")
            self.reading.set()
            self.release.wait(READER_GIVES_UP_SECONDS)
            connection.commit()


def test_a_partition_waits_for_no_long_reader_and_is_made_by_the_next_run(app, database_url, caplog):
    reader, writer = LongReader(database_url), AuditWriter(database_url)
    reader.start()
    assert reader.reading.wait(5)
    writer.start()
    try:
        with app.app_context(), caplog.at_level(logging.WARNING, logger="karibu.partitions"):
            made_while_read = ensure_partitions(FAR)
        writer.stop.set()
        writer.join()
        reader.release.set()
        reader.join()

        slowest = max(writer.durations)
        assert slowest < WRITE_BLOCK_LIMIT_SECONDS, f"a write waited {slowest * 1000:.0f} ms behind the partition"
        assert "audit_log" not in made_while_read  # left to the next run
        assert made_while_read == {table: [f"{table}_p{month}" for month in FAR_MONTHS]
                                   for table in ("webhook_attempts", "events")}
        assert "Partition audit_log_p2041_06 not made (its table was busy)" in caplog.text
        with app.app_context():
            assert ensure_partitions(FAR) == {"audit_log": [f"audit_log_p{month}" for month in FAR_MONTHS]}
    finally:
        writer.stop.set()
        reader.release.set()
        with app.app_context():  # far-future partitions would catch rows other tests expect in the DEFAULT
            db.session.rollback()
            for table in ("audit_log", "webhook_attempts", "events"):
                for month in FAR_MONTHS:
                    db.session.execute(text(f"DROP TABLE IF EXISTS {table}_p{month}"))
            db.session.commit()
