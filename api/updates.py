"""PATCH /applications/update: bulk changes of stage, decision and enrolment."""

from flask import current_app, g, jsonify

from api import bp
from api.bodies import json_object
from core import updates
from core.history import Actor


@bp.patch("/applications/update")
def update_applications():
    parsed = updates.parse_updates(json_object())
    outcome = updates.apply_updates(
        g.scope, parsed, actor=Actor.api(g.principal.actor),
        emit_application_updated=current_app.config["EMIT_APPLICATION_UPDATED"])
    return jsonify(code=200, updated=outcome.updated, data=updates.records(g.scope, outcome.application_ids))
