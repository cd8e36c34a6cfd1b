"""A stage/decision change applied to every application matching the list's filters ("select all N matching"),
in batches of `BATCH_SIZE`, inline up to `BULK_CHANGE_INLINE_LIMIT` and as an RQ job above it.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping

from core.config import settings
from core.errors import InvalidInput, ServiceUnavailable
from core.db import db
from core.applications.history import Actor
from core.applications.listing.counts import count_applications
from core.applications.listing.query import parse_application_query
from core.applications.listing.statements import filtered_applications
from core.models import Application, BulkChange, utcnow
from core.queue import enqueue
from core.scoping import InstitutionScope
from core.applications.state_updates import MAX_UPDATES, apply_updates, parse_updates

BATCH_SIZE = MAX_UPDATES
JOB_QUEUE = "default"
JOB_FUNCTION = "jobs.bulk_changes.apply_bulk_change"
# A million rows at about 1,000 per second fit with room to spare; a rerun only finishes the work.
JOB_TIMEOUT_SECONDS = 3 * 3600
CHANGE_FIELDS = ("stage", "decision", "send_decision")
RUNNING = ("queued", "running")
log = logging.getLogger(__name__)


def start_bulk_change(scope: InstitutionScope, actor: str, filters: Mapping[str, str],
                      change: Mapping[str, object]) -> BulkChange:
    """Record the change of every application matching `filters` (the list's filter parameters), then apply
    it now when the set is small or queue the job that applies it."""
    change = {name: value for name, value in change.items() if value}
    if set(change) - set(CHANGE_FIELDS) or not change:
        raise InvalidInput("Choose a stage or a decision to apply.", field="stage")
    filters = {name: value for name, value in filters.items() if value}
    query = parse_application_query(filters)
    total = count_applications(scope, query.filters)
    if total == 0:
        raise InvalidInput("No applicants match these filters.", field="matching")
    bulk = BulkChange(institution_id=scope.institution_id, actor=actor, filters=filters, change=change,
                      status="queued", total=total, done=0, changed=0, refused=0)
    db.session.add(bulk)
    db.session.commit()
    if total <= settings().BULK_CHANGE_INLINE_LIMIT:
        return run_bulk_change(scope, bulk.id)
    try:
        enqueue(JOB_QUEUE, JOB_FUNCTION, scope.institution_id, bulk.id, job_timeout=JOB_TIMEOUT_SECONDS,
                result_ttl=3600, failure_ttl=86400)
    except Exception as error:  # Redis away: nothing was changed, say so
        log.warning("bulk change %s could not be queued: %s", bulk.id, error)
        _finish(bulk, "failed", "The job queue is unavailable; nothing was changed.")
        raise ServiceUnavailable("The job queue is unavailable; nothing was changed. Try again in a moment.") \
            from None
    return bulk


def get_bulk_change(scope: InstitutionScope, change_id: str) -> BulkChange:
    return scope.require(BulkChange, change_id, "Bulk change")


def run_bulk_change(scope: InstitutionScope, change_id: str) -> BulkChange:
    """Apply a recorded change batch by batch, committing the progress after each batch."""
    bulk = get_bulk_change(scope, change_id)
    if bulk.status not in RUNNING:
        return bulk
    bulk.status, bulk.done, bulk.changed, bulk.refused, bulk.error = "running", 0, 0, 0, None
    db.session.commit()
    change = dict(bulk.change)
    filters = parse_application_query(bulk.filters).filters
    emit = settings().EMIT_APPLICATION_UPDATED
    actor = Actor.staff(bulk.actor)
    last_id = None
    try:
        while ids := _next_ids(scope, filters, last_id):
            batch = parse_updates({"updates": [{"id": application_id, **change} for application_id in ids]})
            try:
                outcome = apply_updates(scope, batch, actor=actor, emit_application_updated=emit)
                changed, refused, reason = outcome.updated, 0, None
            except InvalidInput as error:  # apply_updates rolled the batch back
                changed, refused, reason = 0, len(ids), (error.errors[0]["message"] if error.errors else error.message)
            bulk = get_bulk_change(scope, change_id)
            bulk.done += len(ids)
            bulk.changed += changed
            bulk.refused += refused
            bulk.error = bulk.error or reason
            db.session.commit()
            last_id = ids[-1]
    except Exception:
        db.session.rollback()
        _finish(get_bulk_change(scope, change_id), "failed", "The job stopped on an internal error.")
        raise
    bulk = get_bulk_change(scope, change_id)
    _finish(bulk, "done", bulk.error)
    return bulk


def _next_ids(scope: InstitutionScope, filters: dict, after_id: str | None) -> list[str]:
    statement = filtered_applications(scope, filters, scope.select(Application, Application.id))
    if after_id is not None:
        statement = statement.where(Application.id > after_id)
    return list(db.session.scalars(statement.order_by(Application.id).limit(BATCH_SIZE)))


def _finish(bulk: BulkChange, status: str, error: str | None) -> None:
    bulk.status, bulk.error, bulk.finished_at = status, error, utcnow()
    db.session.commit()
