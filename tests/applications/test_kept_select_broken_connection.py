"""A connection found broken under a KeptSelect is the only one invalidated: the pool's other connections (live)
are kept, each checked once when next taken; dead ones are replaced then (test_read_once.py: a restart)."""
from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import func, select, text

from core.db import KeptSelect, db
from tests.conftest import TEST_DB

pytestmark = pytest.mark.skipif(TEST_DB != "postgres", reason="KeptSelect runs on the driver on PostgreSQL only")


def backends_of_connections_taken_together(engine, count: int) -> set[int]:
    """The server processes of `count` connections checked out at once (then given back to the pool)."""
    taken = [engine.connect() for _ in range(count)]
    try:
        return {connection.execute(text("SELECT pg_backend_pid()")).scalar_one() for connection in taken}
    finally:
        for connection in taken:
            connection.close()


def test_one_broken_connection_leaves_the_pools_others_alone(app):
    ends_its_own_connection = KeptSelect(select(func.pg_terminate_backend(func.pg_backend_pid()).label("ended")))
    with app.app_context():
        engine = db.engine
        engine.dispose()
        pooled = backends_of_connections_taken_together(engine, 3)
        assert len(pooled) == 3

        with pytest.raises(psycopg.OperationalError):
            ends_its_own_connection.rows({})

        survivors = backends_of_connections_taken_together(engine, 2)
        assert survivors < pooled, "the pool's live connections were thrown away with the broken one"
        assert len(backends_of_connections_taken_together(engine, 3) & pooled) == 2  # a new one for the dead one
