"""The partner API blueprint (`/api/v1`): edge gate, rate limit, authentication, audit; routes per area."""
from __future__ import annotations

import time

from flask import Blueprint, current_app, g, jsonify, request

from api.auth import (
    add_rate_limit_headers, authenticate_request, edge_gate_passes, enforce_edge_gate, rate_limit_key,
)
from api.bodies import reject_nul_characters
from api.openapi import openapi_json_bytes
from api.parameters import reject_unknown_query_parameters
from core.audit import audit_api_request, redact_query
from core.extensions import limiter
from core.institutions import describe_institution

API_PREFIX = "/api/v1"

bp = Blueprint("api", __name__, url_prefix=API_PREFIX)


def _is_api_request() -> bool:
    return request.path == API_PREFIX or request.path.startswith(API_PREFIX + "/")


@bp.before_app_request
def _gate_api_requests():
    """Runs for every `/api/v1…` path, matched or not: timing and the edge gate."""
    if not _is_api_request():
        return None
    g.api_started = time.perf_counter()
    enforce_edge_gate()
    return None


bp.before_request(authenticate_request)
bp.before_request(reject_nul_characters)
bp.before_request(reject_unknown_query_parameters)


@bp.after_app_request
def _finish_api_response(response):
    if not _is_api_request():
        return response
    # Responses hold personal data: no shared or browser cache may keep them.
    response.headers.setdefault("Cache-Control", "no-store")
    add_rate_limit_headers(response)
    if "api_started" in g:
        principal = g.get("principal")
        audit_api_request(
            source="api",
            request_id=g.get("request_id", ""),
            institution_id=principal.institution_id if principal else None,
            actor=principal.actor if principal else "anonymous",
            action=request.endpoint or "",
            method=request.method,
            path=request.path,
            query=redact_query(request.query_string.decode("latin-1")),
            status=response.status_code,
            duration_ms=int((time.perf_counter() - g.api_started) * 1000),
            client_ip=request.remote_addr or "",
            user_agent=request.user_agent.string or "",
        )
    return response


@bp.get("/openapi.json")
def openapi_json():
    """The OpenAPI 3.1 document (public: it describes the API, it holds no data)."""
    return current_app.response_class(openapi_json_bytes(current_app.config["PUBLIC_BASE_URL"]),
                                      mimetype="application/json")


openapi_json.public = True


@bp.get("/institution")
def current_institution():
    """Who am I: the institution and credential behind this request (a quick way to check a key)."""
    institution = describe_institution(g.principal.institution_id)
    return jsonify({"code": 200, "institution": institution,
                    "credential": {"kind": g.principal.kind, "key_id": g.principal.key_id,
                                   "actor": g.principal.actor}})

limiter.limit(
    lambda: current_app.config["API_RATE_LIMIT"],
    key_func=rate_limit_key,
    exempt_when=lambda: not edge_gate_passes(),
)(bp)

# Route modules register their views on `bp`.
from api import applications, cycles, events, reference, updates, verifications, zip  # noqa: E402,F401
