"""The partner API blueprint (`/api/v1`): edge gate, rate limit, authentication, audit; routes per area."""
from __future__ import annotations

from flask import Blueprint, current_app, g, jsonify, request

from api.auth import add_rate_limit_headers, authenticate_request, count_unrouted_request, enforce_edge_gate
from api.openapi import openapi_json_bytes
from api.parameters import reject_unknown_query_parameters
from core.audit.recording import AuditEntry
from core.config import settings
from core.institutions import describe_institution

API_PREFIX = "/api/v1"

bp = Blueprint("api", __name__, url_prefix=API_PREFIX)


def is_api_request() -> bool:
    """Whether the request's path is an `/api/v1…` path (matched or not); the API rate-limits those itself."""
    return request.path == API_PREFIX or request.path.startswith(API_PREFIX + "/")


@bp.before_app_request
def _gate_api_requests():
    """Runs for every `/api/v1…` path, matched or not: the audit row is declared, then the edge gate; a path
    that matched no route is counted by the limits here (the blueprint's own hooks run only for its routes)."""
    if not is_api_request():
        return None
    g.audit = AuditEntry(source="api", action=request.endpoint or "")
    enforce_edge_gate()
    if request.url_rule is None:
        count_unrouted_request()
        _audit_as_the_principal()
    return None


def _audit_as_the_principal() -> None:
    principal = g.get("principal")  # none on public views
    if principal is not None:
        g.audit.actor, g.audit.institution_id = principal.actor, principal.institution_id


bp.before_request(authenticate_request)
bp.before_request(_audit_as_the_principal)
bp.before_request(reject_unknown_query_parameters)


@bp.after_app_request
def _finish_api_response(response):
    if not is_api_request():
        return response
    # Responses hold personal data: no shared or browser cache may keep them.
    response.headers.setdefault("Cache-Control", "no-store")
    add_rate_limit_headers(response)
    # A request refused before `_gate_api_requests` ran is audited too: this hook runs
    # before the app's audit writer, which was registered earlier (after_request hooks run in reverse order).
    if "audit" not in g:
        g.audit = AuditEntry(source="api", action=request.endpoint or "")
    return response


@bp.get("/openapi.json")
def openapi_json():
    """The OpenAPI 3.1 document (public: it describes the API, it holds no data)."""
    return current_app.response_class(openapi_json_bytes(settings().PUBLIC_BASE_URL),
                                      mimetype="application/json")


openapi_json.public = True


@bp.get("/institution")
def current_institution():
    """Who am I: the institution and credential behind this request (a quick way to check a key)."""
    institution = describe_institution(g.scope)
    return jsonify({"code": 200, "institution": institution,
                    "credential": {"kind": g.principal.kind, "key_id": g.principal.key_id,
                                   "actor": g.principal.actor}})

# Route modules register their views on `bp`.
from api import applications, cycles, events, reference, updates, verifications, zip  # noqa: E402,F401
