"""The planner's view of the short grams (migration 0022_short_gram_statistics): the index column keeps
statistics of every gram, so a pair that no application's text holds is estimated as rare and read from the
index. With the default target a missing pair was estimated at 0.6% of the applications and a search for it
walked all of them (300–350 ms at a million, docs/performance.md). A corpus small enough for a test gets every
gram into the statistics whatever the target, so this checks the setting a migrated database has."""
from __future__ import annotations

import pytest
from sqlalchemy import text

from core.db import db
from tests.conftest import TEST_DB

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="the short-gram index exists on PostgreSQL only")


def test_the_short_gram_index_keeps_statistics_of_every_gram(app):
    with app.app_context():
        target = db.session.scalar(text(
            "SELECT attstattarget FROM pg_attribute "
            "WHERE attrelid = 'ix_applications_search_text_short_grams'::regclass AND attnum = 1"))
    assert target == 1000
