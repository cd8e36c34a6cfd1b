"""`/healthz` (the process answers) and `/readyz` (database, Redis, schema, each within `READINESS_TIMEOUT`; 503
naming what failed; during a SECRET_KEY rotation, the rows still to re-encrypt), for load balancers.
"""
from __future__ import annotations

import ast
import math
import threading
import time
from pathlib import Path

import redis
from flask import Blueprint, current_app, jsonify
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from core.config import settings
from core.db import db
from core.encryption.columns import pending_reencryption
from core.redis_faults import redis_fault_counts

health_bp = Blueprint("health", __name__)


def _no_store(response):
    response.headers["Cache-Control"] = "no-store"
    return response


@health_bp.get("/healthz")
def healthz():
    # Also the Redis faults this process rode out since it started (rate limits counted in-process, drains
    # left to the sweep): counted in memory, so the answer still touches no dependency.
    return _no_store(jsonify({"status": "ok", "redis_faults": redis_fault_counts()}))


@health_bp.get("/readyz")
def readyz():
    checks = {"database": _check_database(), "redis": _check_redis()}
    if checks["database"] == "ok":
        checks["migrations"] = _check_migrations()
    ready = all(value == "ok" for value in checks.values())
    failing = [name for name, value in checks.items() if value != "ok"]
    rotation = _key_rotation() if checks["database"] == "ok" and settings().SECRET_KEY_FALLBACKS else None
    response = jsonify({"status": "ready" if ready else "unavailable", "checks": checks,
                        **({} if ready else {"failing": failing}),
                        **({} if rotation is None else {"secret_key_rotation": rotation})})
    response.status_code = 200 if ready else 503
    return _no_store(response)


# Seconds a count of the rows still to re-encrypt is reused: it decrypts every stored ciphertext.
ROTATION_COUNT_SECONDS = 15


class RotationCount:
    """While SECRET_KEY_FALLBACKS is set (informational, never a failure): the rows `secrets reencrypt` has still
    to rewrite and those no key reads, as last counted; a stale count is refreshed in a thread of its own, so
    /readyz never waits for it (`rows_to_reencrypt` is null until the first count is in)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._answer: dict | None = None
        self._counted_at = float("-inf")
        self._counting = False

    def read(self, app) -> dict:
        with self._lock:
            if time.monotonic() - self._counted_at >= ROTATION_COUNT_SECONDS and not self._counting:
                self._counting = True
                threading.Thread(target=self._count, args=(app,), name="readyz-rotation-count", daemon=True).start()
            return self._answer or {"fallback_keys": len(settings().SECRET_KEY_FALLBACKS), "rows_to_reencrypt": None}

    def _count(self, app) -> None:
        answer = None
        try:
            with app.app_context(), _probe_engine().connect() as connection:
                pending = pending_reencryption(connection)
                answer = {"fallback_keys": len(settings().SECRET_KEY_FALLBACKS),
                          "rows_to_reencrypt": sum(count.to_reencrypt for count in pending.values()),
                          "rows_unreadable": sum(count.unreadable for count in pending.values()),
                          "columns": {name: {"to_reencrypt": count.to_reencrypt, "unreadable": count.unreadable}
                                      for name, count in pending.items()}}
        except Exception:  # noqa: BLE001 - a count that cannot be made is logged, and tried again next time
            app.logger.warning("Readiness: the rows to re-encrypt could not be counted", exc_info=True)
        with self._lock:
            self._answer = answer or self._answer
            self._counted_at = time.monotonic() if answer else float("-inf")
            self._counting = False


def _key_rotation() -> dict:
    app = current_app._get_current_object()
    return app.extensions.setdefault("karibu_key_rotation", RotationCount()).read(app)


def _deadline() -> float:
    return settings().READINESS_TIMEOUT


def _probe_engine():
    """A small engine of its own with connect and statement deadlines (the app's pool has neither)."""
    engine = current_app.extensions.get("karibu_readiness_engine")
    if engine is None:
        url = db.engine.url  # Flask-SQLAlchemy's, which tests may point elsewhere than DATABASE_URL
        seconds = _deadline()
        if url.get_backend_name() == "postgresql":
            connect_args = {"connect_timeout": max(1, math.ceil(seconds)),
                            "options": f"-c statement_timeout={int(seconds * 1000)}"}
        else:
            connect_args = {"timeout": seconds}
        engine = create_engine(url, poolclass=NullPool, connect_args=connect_args)
        current_app.extensions["karibu_readiness_engine"] = engine
    return engine


def _check_database() -> str:
    try:
        with _probe_engine().connect() as connection:
            connection.execute(text("SELECT 1"))
        return "ok"
    except Exception:  # noqa: BLE001 - reported, not raised: naming what is down is the point
        current_app.logger.warning("Readiness: the database did not answer", exc_info=True)
        return "unreachable"


def _check_redis() -> str:
    client = current_app.extensions.get("karibu_readiness_redis")
    if client is None:
        seconds = _deadline()
        client = redis.Redis.from_url(settings().REDIS_URL, socket_connect_timeout=seconds,
                                      socket_timeout=seconds)
        current_app.extensions["karibu_readiness_redis"] = client
    try:
        client.ping()
        return "ok"
    except Exception:  # noqa: BLE001
        current_app.logger.warning("Readiness: Redis did not answer", exc_info=True)
        return "unreachable"


def migration_heads(versions: Path) -> set[str]:
    """The revisions no other revision builds on, read from the files' `revision`/`down_revision` lines
    (what Alembic's ScriptDirectory would say, without importing Alembic into every web worker)."""
    revisions, parents = set(), set()
    for path in versions.glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id in ("revision", "down_revision"):
                name, value = node.targets[0].id, ast.literal_eval(node.value)
                if name == "revision":
                    revisions.add(value)
                elif name == "down_revision" and value is not None:
                    parents.update(value if isinstance(value, (tuple, list)) else (value,))
    return revisions - parents


def _check_migrations() -> str:
    """`ok` when the database's Alembic revision is the code's head, else `not_at_head`/`not_migrated`."""
    heads = current_app.extensions.get("karibu_migration_heads")
    if heads is None:
        directory = Path(current_app.root_path) / "migrations"
        heads = current_app.extensions["karibu_migration_heads"] = migration_heads(directory / "versions")
    try:
        with _probe_engine().connect() as connection:
            current = set(connection.execute(text("SELECT version_num FROM alembic_version")).scalars())
    except Exception:  # noqa: BLE001 - no alembic_version table: never migrated
        return "not_migrated"
    return "ok" if current == heads else "not_at_head"
