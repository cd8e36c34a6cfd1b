"""Edge gate, authentication and rate limits of the API caller (one place for all endpoints).

Rate limits are keyed on the resolved credential, so they are checked after authentication, not in
Flask-Limiter's own before-request hook: one counter per live key or identity-provider subject, and per
client address for the trial key and public views, shared by every route (`API_RATE_LIMIT`). Before a
credential is checked, the address's budget of failed authentications (`API_AUTH_FAILURE_RATE_LIMIT`) must
not be spent, so guessing keys from one address is slow whatever the header says.
"""
from __future__ import annotations

import hmac
import time

from flask import current_app, g, request

from core.auth import AuthSettings, authenticate
from core.errors import Forbidden, NotAuthenticated
from core.extensions import limiter
from core.redis_faults import record_redis_fault
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


def _authentication_failed(_response) -> bool:
    return g.get("authentication_failed", False)


def _check_auth_failure_budget() -> None:
    """429 when this address has spent its failed authentications; a failure is counted after the response."""
    with limiter.shared_limit(lambda: current_app.config["API_AUTH_FAILURE_RATE_LIMIT"],
                              scope=AUTH_FAILURE_LIMIT_SCOPE, key_func=_client_address_key,
                              deduct_when=_authentication_failed):
        pass


def _check_credential_budget() -> None:
    """One counter per credential across every API route; 429 when it is spent."""
    with limiter.shared_limit(lambda: current_app.config["API_RATE_LIMIT"], scope=API_LIMIT_SCOPE,
                              key_func=rate_limit_key):
        pass


def add_rate_limit_headers(response) -> None:
    """X-RateLimit-Limit/Remaining/Reset of the limit checked last, Retry-After only on a 429.

    That is the credential's limit once authenticated, the address's failed-authentication budget on a 401
    or on the 429 that budget gives. Headers are left out, not a 500, when the counters cannot be read.
    """
    current = limiter.current_limit
    if current is None:
        return
    try:
        remaining, reset_at = current.remaining, int(current.reset_at)
    except Exception as error:  # rate-limit storage unreachable: the request itself was allowed through
        record_redis_fault("rate_limit", error)
        return
    response.headers["X-RateLimit-Limit"] = str(current.limit.amount)
    response.headers["X-RateLimit-Remaining"] = str(remaining)
    response.headers["X-RateLimit-Reset"] = str(reset_at)
    if response.status_code == 429:
        response.headers["Retry-After"] = str(max(1, int(reset_at - time.time())))


def authenticate_request() -> None:
    """Authenticate (unless the view is public), then count the request against the credential's limit."""
    view = current_app.view_functions.get(request.endpoint)
    if not getattr(view, "public", False):
        _check_auth_failure_budget()
        try:
            principal = authenticate(request.headers.get("Authorization"),
                                     AuthSettings.from_config(current_app.config))
        except NotAuthenticated:
            g.authentication_failed = True
            raise
        if principal.is_trial and not getattr(view, "trial_allowed", False):
            raise NotAuthenticated(TRIAL_KEY_SCOPE)
        g.principal = principal
        g.scope = None if principal.is_trial else InstitutionScope(principal.institution_id)
    _check_credential_budget()
