"""The planner's view of the short grams (migration 0022_short_gram_statistics): the index column keeps
statistics of every gram, so a pair that no application's text holds is estimated as rare and read from the
index. With the default target a missing pair was estimated at 0.6% of the applications and a search for it
walked all of them (300–350 ms at a million, docs/performance.md). A corpus small enough for a test gets every
gram into the statistics whatever the target, so this checks the setting a database brought to head by
`flask db upgrade` has (a new one, as an operator's: the suite's own database is shared by many tests)."""
from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import TEST_DB
from tests.ops.test_migrations import empty_database, flask_command

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="the short-gram index exists on PostgreSQL only")


def test_a_migrated_database_keeps_statistics_of_every_gram(tmp_path):
    with empty_database(tmp_path) as url:
        upgraded = flask_command(url, "db", "upgrade")
        assert upgraded.returncode == 0, upgraded.stderr
        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                target = connection.scalar(text(
                    "SELECT attstattarget FROM pg_attribute "
                    "WHERE attrelid = 'ix_applications_search_text_short_grams'::regclass AND attnum = 1"))
        finally:
            engine.dispose()
    assert target == 1000
