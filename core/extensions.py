"""Extension objects, created unbound here and bound to the app by `wsgi.register_extensions`."""
from __future__ import annotations

import sqlite3

import redis
from flask import current_app
from flask_babel import Babel
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy import Engine, event

from core.config import settings
from core.models.base import Base

# Bound parameters hold applicants' personal data and secrets: never put them in error messages and logs.
db = SQLAlchemy(model_class=Base, engine_options={"hide_parameters": True})

SQLITE_BUSY_TIMEOUT_MS = 5000


@event.listens_for(Engine, "connect")
def _tune_sqlite(dbapi_connection, _record) -> None:
    """SQLite: write-ahead log (readers never block the writer), fewer fsyncs, wait for locks."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()
migrate = Migrate()
login_manager = LoginManager()
csrf = CSRFProtect()
babel = Babel()


# Rate-limit headers are written by the API itself (api.auth.add_rate_limit_headers).
limiter = Limiter(key_func=get_remote_address, headers_enabled=False)


def redis_connection() -> redis.Redis:
    """One shared client per app (a connection pool), built lazily from REDIS_URL, with short timeouts.

    (The RQ worker lengthens the socket timeout of its own connection to cover its blocking dequeue.)
    """
    client = current_app.extensions.get("karibu_redis")
    if client is None:
        client = redis.Redis.from_url(settings().REDIS_URL, **settings().redis_options())
        current_app.extensions["karibu_redis"] = client
    return client
