"""Routes of the verifications area, registered on `api.bp`."""
from __future__ import annotations

from flask import g, jsonify, request

from api import bp
from api.auth import trial_allowed
from api.bodies import json_object
from core.verification import list_issuers, verify
from core.verification.idempotency import HEADER as IDEMPOTENCY_HEADER

REPLAYED_HEADER = "Idempotent-Replayed"


@bp.post("/verifications")
@trial_allowed
def create_verification():
    """Verify an examination record against its registry (demo records with the trial key)."""
    result = verify(g.principal, json_object(), request.headers.get(IDEMPOTENCY_HEADER))
    response = jsonify(result.body)
    if result.replayed:
        response.headers[REPLAYED_HEADER] = "true"
    return response


@bp.get("/verifications/issuers")
@trial_allowed
def list_verification_issuers():
    """The registries and their request fields; the trial key also sees request bodies matching demo records."""
    return jsonify({"code": 200, "data": list_issuers(include_demo=g.principal.is_trial or not g.principal.livemode)})
