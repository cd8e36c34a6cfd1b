"""Edge gate, authentication and rate limits of the API caller (one place for all endpoints)."""
from __future__ import annotations

import hmac
import time

from flask import current_app, g, request
from werkzeug.exceptions import TooManyRequests

from api.rate_limits import Counter, check_and_hit, counters
from core.accounts.api_authentication import AuthSettings, authenticate
from core.config import settings
from core.errors import Forbidden, NotAuthenticated, NotFound
from core.metrics import RATE_LIMIT_REFUSALS
from core.institutions.sandbox import sandbox_scope
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
    secret = settings().EDGE_SHARED_SECRET
    if not secret:
        return True
    presented = request.headers.get(EDGE_HEADER, "")
    return hmac.compare_digest(presented.encode(), secret.encode())


def enforce_edge_gate() -> None:
    if not edge_gate_passes():
        raise Forbidden(EDGE_FORBIDDEN)


API_LIMIT_SCOPE = "api"
AUTH_FAILURE_LIMIT_SCOPE = "api-auth-failures"


def _client_address_key() -> str:
    return "addr:" + (request.remote_addr or "unknown")


def rate_limit_key() -> str:
    """The resolved credential (key id, identity-provider subject), else the client address."""
    principal = g.get("principal")
    if principal is not None and principal.credential_id:
        return principal.credential_id
    return _client_address_key()


def _failure_counters() -> list[Counter]:
    return counters(settings().API_AUTH_FAILURE_RATE_LIMIT, AUTH_FAILURE_LIMIT_SCOPE,
                    _client_address_key())


def _credential_counters() -> list[Counter]:
    return counters(settings().API_RATE_LIMIT, API_LIMIT_SCOPE, rate_limit_key())


def _enforce(tests: list[Counter], hits: list[Counter]) -> None:
    """One round trip: 429 when the address's failure budget (tested) or the credential's budget (hit) is
    spent; the usage is kept for the response headers."""
    outcome = check_and_hit(tests, hits)
    g.rate_limit_usage = outcome.usage
    if not outcome.allowed:
        RATE_LIMIT_REFUSALS.labels(endpoint=request.endpoint).inc()  # as Flask-Limiter's refusals are counted
        raise TooManyRequests()


def count_authentication_failure() -> None:
    """After a 401: spend one of the address's failed authentications (its usage goes in the headers)."""
    g.rate_limit_usage = check_and_hit([], _failure_counters()).usage


def add_rate_limit_headers(response) -> None:
    """X-RateLimit-Limit/Remaining/Reset of the limit checked last (the credential's or the address's failure
    budget), Retry-After only on a 429.
    """
    if g.pop("authentication_failed", False):
        count_authentication_failure()
    usage = g.get("rate_limit_usage")
    if usage is None:
        return
    response.headers["X-RateLimit-Limit"] = str(usage.limit.amount)
    response.headers["X-RateLimit-Remaining"] = str(max(0, usage.remaining))
    response.headers["X-RateLimit-Reset"] = str(usage.reset_at)
    if response.status_code == 429:
        response.headers["Retry-After"] = str(max(1, int(usage.reset_at - time.time())))


def authenticate_request() -> None:
    """Authenticate (unless the view is public), then check the address's failure budget and count the request
    against the credential's limit, in one Redis round trip; a spent budget is a 429 whatever the lookup found.
    """
    view = current_app.view_functions.get(request.endpoint)
    if getattr(view, "public", False):
        _enforce([], _credential_counters())
        return
    try:
        principal = authenticate(request.headers.get("Authorization"),
                                 AuthSettings.from_config(settings()))
        if principal.is_trial and not getattr(view, "trial_allowed", False):
            raise NotAuthenticated(TRIAL_KEY_SCOPE)
    except (NotAuthenticated, NotFound):
        _enforce(_failure_counters(), [])
        g.authentication_failed = True  # a key of a disabled institution (404) is a failed attempt too
        raise
    g.principal = principal
    g.scope = None if principal.is_trial else InstitutionScope(principal.institution_id)
    if g.scope is not None and not principal.livemode:
        g.scope = sandbox_scope(g.scope)  # a test key reaches the sandbox only
    _enforce(_failure_counters(), _credential_counters())


def count_unrouted_request() -> None:
    """Count an `/api/v1` request that matched no route (404) or method (405) like any other request; the answer is
    the routing's own (or 429 once the budget is spent).
    """
    try:
        principal = authenticate(request.headers.get("Authorization"), AuthSettings.from_config(settings()))
    except (NotAuthenticated, NotFound):
        _enforce(_failure_counters(), [])
        g.authentication_failed = True
        return
    g.principal = principal
    _enforce(_failure_counters(), _credential_counters())
