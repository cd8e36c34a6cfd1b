"""Edge gate, rate-limit identity and authentication of the API caller (one place for all endpoints)."""
from __future__ import annotations

import hashlib
import hmac
import time

from flask import current_app, g, request

from core.auth import AuthSettings, authenticate
from core.errors import Forbidden, NotAuthenticated
from core.extensions import limiter
from core.scoping import InstitutionScope

EDGE_HEADER = "X-Edge-Auth"
EDGE_FORBIDDEN = "Forbidden: request did not come through the official endpoint"
TRIAL_KEY_SCOPE = ("The trial API key only grants access to record verification "
                   "(POST /api/v1/verifications and GET /api/v1/verifications/issuers); use a live key")


def trial_allowed(view):
    """Mark a view as reachable with the public trial key."""
    view.trial_allowed = True
    return view


def edge_gate_passes() -> bool:
    secret = current_app.config["EDGE_SHARED_SECRET"]
    if not secret:
        return True
    presented = request.headers.get(EDGE_HEADER, "")
    return hmac.compare_digest(presented.encode(), secret.encode())


def enforce_edge_gate() -> None:
    if not edge_gate_passes():
        raise Forbidden(EDGE_FORBIDDEN)


def rate_limit_key() -> str:
    """Per credential (hashed, never the raw key), else per client address."""
    header = request.headers.get("Authorization", "")
    if header.strip():
        return "cred:" + hashlib.sha256(header.strip().encode()).hexdigest()[:32]
    return "addr:" + (request.remote_addr or "unknown")


def add_rate_limit_headers(response) -> None:
    """X-RateLimit-Limit/Remaining/Reset on every limited response, Retry-After only on a 429."""
    current = limiter.current_limit
    if current is None:
        return
    response.headers["X-RateLimit-Limit"] = str(current.limit.amount)
    response.headers["X-RateLimit-Remaining"] = str(current.remaining)
    response.headers["X-RateLimit-Reset"] = str(int(current.reset_at))
    if response.status_code == 429:
        response.headers["Retry-After"] = str(max(1, int(current.reset_at - time.time())))


def authenticate_request() -> None:
    view = current_app.view_functions.get(request.endpoint)
    if getattr(view, "public", False):
        return
    principal = authenticate(request.headers.get("Authorization"), AuthSettings.from_config(current_app.config))
    if principal.is_trial and not getattr(view, "trial_allowed", False):
        raise NotAuthenticated(TRIAL_KEY_SCOPE)
    g.principal = principal
    g.scope = None if principal.is_trial else InstitutionScope(principal.institution_id)
