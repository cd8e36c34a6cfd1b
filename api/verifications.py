"""Routes of the verifications area, registered on `api.bp`."""
from __future__ import annotations

import json

from flask import g, jsonify

from api import bp
from api.auth import trial_allowed
from api.bodies import json_object
from api.errors import handle_api_exception
from api.idempotency import idempotent, stored_response
from core.idempotency.keys import StoredAnswer
from core.verification import RecordNotFound, list_issuers, replayed_answer, verify


def _replayed(stored: StoredAnswer):
    """A stored lookup answer, shaped as first sent but with nothing billed for the repeat (a refused request's
    answer, which billed nothing, as first sent)."""
    body = json.loads(stored.body)
    if "billing" not in body:
        return stored_response(stored)
    body = replayed_answer(body)
    if stored.status_code == 404:
        return handle_api_exception(RecordNotFound(body))
    return jsonify(body)


@bp.post("/verifications")
@trial_allowed
@idempotent(replay=_replayed)
def create_verification():
    """Verify an examination record against its registry (demo records with the trial key)."""
    return jsonify(verify(g.principal, json_object()).body)


@bp.get("/verifications/issuers")
@trial_allowed
def list_verification_issuers():
    """The registries and their request fields; the trial key also sees request bodies matching demo records."""
    return jsonify({"code": 200, "data": list_issuers(include_demo=g.principal.is_trial or not g.principal.livemode)})
