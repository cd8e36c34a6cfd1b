"""PATCH /applications/update: bulk changes of stage, decision and enrolment."""

import json

from flask import current_app, g, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from api import bp
from core import updates
from core.errors import InvalidInput, PayloadTooLarge


def _body_too_large() -> PayloadTooLarge:
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    return PayloadTooLarge(f"request body is larger than the maximum of {limit} bytes", max_bytes=limit)


def _json_body():
    """The parsed JSON body, or a 400/413 that says what is wrong with it."""
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    if limit and request.content_length is not None and request.content_length > limit:
        raise _body_too_large()
    if request.mimetype != "application/json":
        raise InvalidInput("Content-Type must be application/json", field="Content-Type")
    try:
        raw = request.get_data()
    except RequestEntityTooLarge:
        raise _body_too_large() from None
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
