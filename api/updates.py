"""PATCH /applications/update: bulk changes of stage, decision and enrolment."""

import json

from flask import current_app, g, jsonify, request

from api import bp
from core import updates
from core.errors import InvalidInput


def _json_body():
    """The parsed JSON body, or a 400 that says what is wrong with it (a body over the cap is a 413)."""
    if request.mimetype != "application/json":
        raise InvalidInput("Content-Type must be application/json", header="Content-Type")
    raw = request.get_data()
    if not raw:
        raise InvalidInput("request body is empty: send {\"updates\": [...]}", field="updates")
    try:
        return json.loads(raw)
    except ValueError as error:
        raise InvalidInput(f"request body is not valid JSON: {error}", field="body") from None


@bp.patch("/applications/update")
def update_applications():
    parsed = updates.parse_updates(_json_body())
    outcome = updates.apply_updates(
        g.scope, parsed, emit_application_updated=current_app.config["EMIT_APPLICATION_UPDATED"])
    return jsonify(code=200, updated=outcome.updated, data=updates.records(g.scope, outcome.application_ids))
