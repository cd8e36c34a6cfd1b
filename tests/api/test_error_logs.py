"""A database error reaches the log with its statement but never with the values bound to it; a database that
cannot be reached is a 503, not logged as a bug."""
from __future__ import annotations

import logging
import sqlite3

from sqlalchemy import text
from sqlalchemy.exc import OperationalError

import api
from core.db import db

CANARY = "canary-1199880012345678-secret"


def test_a_database_error_is_logged_without_its_parameter_values(client, monkeypatch, caplog):
    def failing_query(*_):
        db.session.execute(text("SELECT * FROM no_such_table WHERE national_id = :national_id"),
                           {"national_id": CANARY})

    monkeypatch.setattr(api, "openapi_json_bytes", failing_query)
    with caplog.at_level(logging.ERROR):
        response = client.get("/api/v1/openapi.json")

    assert response.status_code == 500 and response.json == {"code": 500, "error": "Internal server error"}
    [record] = [record for record in caplog.records if record.exc_info]
    logged = caplog.text + logging.Formatter().formatException(record.exc_info)
    assert "no_such_table" in logged, "the statement itself is still there to debug with"
    assert "SQL parameters hidden" in logged
    assert CANARY not in logged


def test_a_locked_sqlite_database_is_an_outage_not_a_bug(client, monkeypatch):
    """SQLite reports both a busy database and a bad statement as OperationalError: only the first is a 503."""
    def locked(*_):
        raise OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked"))

    monkeypatch.setattr(api, "openapi_json_bytes", locked)
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
