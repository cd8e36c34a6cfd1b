"""Extension objects, created unbound here and bound to the app by `wsgi.register_extensions`."""
from __future__ import annotations

import redis
from flask import current_app, request
from flask_limiter import Limiter
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect

from core.models.base import Base

db = SQLAlchemy(model_class=Base)
migrate = Migrate()
login_manager = LoginManager()
csrf = CSRFProtect()


def _client_address() -> str:
    return request.remote_addr or "unknown"


limiter = Limiter(key_func=_client_address, headers_enabled=True)


def redis_connection() -> redis.Redis:
    """One shared client per app (a connection pool), built lazily from REDIS_URL."""
    client = current_app.extensions.get("karibu_redis")
    if client is None:
        client = redis.Redis.from_url(current_app.config["REDIS_URL"])
        current_app.extensions["karibu_redis"] = client
    return client
