"""PATCH /applications/update: bulk changes of stage, decision and enrolment."""

from flask import g, jsonify

from api import bp
from api.bodies import json_object
from api.idempotency import idempotent
from core.applications import state_updates
from core.applications.history import Actor
from core.config import settings


@bp.patch("/applications/update")
@idempotent
def update_applications():
    parsed = state_updates.parse_updates(json_object())
    outcome = state_updates.apply_updates(
        g.scope, parsed, actor=Actor.api(g.principal.actor),
        emit_application_updated=settings().EMIT_APPLICATION_UPDATED)
    return jsonify(code=200, updated=outcome.updated, data=state_updates.records(g.scope, outcome.application_ids))
