"""Partitions exist only on PostgreSQL: the tests here are skipped on SQLite, which keeps plain tables."""
from __future__ import annotations

import pytest

from tests.conftest import TEST_DB

ONLY_ON_POSTGRES = pytest.mark.skipif(
    TEST_DB != "postgres", reason="monthly partitions exist only on PostgreSQL; SQLite keeps plain tables (migration 0028)")
