"""`/healthz`: database and Redis reachability, and Redis faults ridden out, for operators and the edge."""
from __future__ import annotations

from flask import Blueprint, jsonify
from sqlalchemy import text

from core.extensions import db, redis_connection
from core.redis_faults import redis_fault_counts

health_bp = Blueprint("health", __name__)


@health_bp.get("/healthz")
def healthz():
    checks = {}
    try:
        db.session.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception:  # reported, not raised: the endpoint's job is to say what is down
        db.session.rollback()
        checks["database"] = "unreachable"
    try:
        redis_connection().ping()
        checks["redis"] = "ok"
    except Exception:
        checks["redis"] = "unreachable"
    healthy = all(value == "ok" for value in checks.values())
    # Faults this process rode out since it started (rate limits counted in-process, drains left to the sweep).
    response = jsonify({"status": "ok" if healthy else "degraded", **checks, "redis_faults": redis_fault_counts()})
    response.status_code = 200 if healthy else 503
    response.headers["Cache-Control"] = "no-store"
    return response
