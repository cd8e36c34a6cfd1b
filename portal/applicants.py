"""Applicants: the filtered table with cursor "load more", and one applicant's file."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from flask import Response, current_app, flash, g, redirect, request, send_file, url_for

from core.applicant_file import applicant_file, application_document
from core.csv_export import export_applications_csv
from core.documents import attachment_disposition, document_storage, served_content_type
from core.errors import InvalidInput, NotFound
from core.institutions import pipeline as stage_pipeline
from core.listing import (
    count_applications, fetch_application_page, fetch_applications_by_id, parse_application_query,
)
from core.models import utcnow
from core.models.admissions import DECISIONS
from core.overview import cycles, programs
from core.partner_records import application_record
from core.updates import MAX_UPDATES, apply_updates, parse_updates
from portal import bp
from portal.applicant_list import (
    COLUMNS, COUNT_CAP, DEFAULT_SORT, SORT_CHOICES, Filters, ListState, count_is_capped, list_url_from, match_count_text,
    saved_views_context,
)
from portal.applicant_timeline import timeline_context
from portal.forms import ActionForm, BulkUpdateForm, RecordAnswerForm, submitted
from portal.rendering import is_partial_request, render_page
from portal.security import audit, safe_next, staff_required

PAGE_SIZE = 50


@dataclass(frozen=True)
class Choices:
    cycles: list
    programs: list
    stages: list
    decisions: tuple = DECISIONS


def _stage_names(pipeline=None) -> dict[str, str]:
    return {stage.key: stage.name for stage in (pipeline or stage_pipeline(g.scope))}


def _page(state: ListState, cursor: str | None):
    args = {**state.filters.as_args(), "sort": state.sort.token}
    if cursor:
        args["cursor"] = cursor
    query = parse_application_query(args, kind="portal-applicants", default_limit=PAGE_SIZE,
                                    default_sort=DEFAULT_SORT)
    page = fetch_application_page(g.scope, query)
    return query, page, [application_record(row) for row in page.rows]


@bp.get("/applicants")
@staff_required
def applicants():
    state = ListState.from_args(request.args)
    filters = state.filters
    cursor = request.args.get("cursor") or None
    query, page, records = _page(state, cursor)
    pipeline = stage_pipeline(g.scope)
    context = dict(list_state=state, filters=filters, page=page, records=records, cursor=cursor,
                   stage_names=_stage_names(pipeline), list_url=state.url())
    if is_partial_request() and cursor:
        return render_page("applicants/partial/rows.html", **context)
    total = count_applications(g.scope, query.filters, cap=COUNT_CAP)
    choices = Choices(cycles=cycles(g.scope), programs=programs(g.scope), stages=pipeline)
    # The address bar shows only the state in use, so a copied link is short and shareable.
    headers = {"HX-Push-Url": state.url()} if is_partial_request() else {}
    return render_page("applicants/index.html", "applicants/partial/results.html", choices=choices,
                       headers=headers, oob_export=True, total=total, total_capped=count_is_capped(total),
                       count_cap=COUNT_CAP,
                       match_count=match_count_text(total),
                       sort_choices=SORT_CHOICES, column_choices=COLUMNS, **saved_views_context(), **context)


@bp.get("/applicants/<application_id>")
@staff_required
def applicant_detail(application_id: str):
    file = applicant_file(g.scope, application_id)
    audit("applicant.view", application_id)
    return render_page("applicants/detail.html", file=file, record=file.record, stage_names=_stage_names(),
                       answer_form=RecordAnswerForm(), back_url=list_url_from(request.args.get("back")),
                       **timeline_context(file))


@bp.get("/applicants/<application_id>/documents/<document_id>")
@staff_required
def applicant_document(application_id: str, document_id: str):
    """The stored file as an attachment, under a safe name and an allowed type (never what was uploaded as is)."""
    document = application_document(g.scope, application_id, document_id)
    storage = document_storage()
    if not storage.exists(document.sha256):
        raise NotFound("The file of this document is missing from storage.")
    audit("document.download", document_id)
    response = send_file(storage.path(document.sha256), mimetype=served_content_type(document.content_type),
                         max_age=0)
    response.headers["Content-Disposition"] = attachment_disposition(document.filename, document.id)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _back_to_list(message: str, category: str):
    """No-JavaScript fallback of the bulk form: back to the page it was sent from, with a message."""
    flash(message, category)
    referrer = urlsplit(request.referrer or "")
    same_site = referrer.netloc == request.host
    path = referrer.path + (f"?{referrer.query}" if referrer.query else "") if same_site else None
    return redirect(safe_next(path) or url_for("portal.applicants"))


@bp.post("/applicants/bulk")
@staff_required
def applicants_bulk():
    """Stage and decision changes of the selected rows: all or nothing, the same rules as the API's PATCH."""
    form = submitted(BulkUpdateForm())
    ids = list(dict.fromkeys(value for value in form.ids.data if value))
    change = {field.name: field.data for field in (form.stage, form.decision) if field.data}
    if form.send_decision.data:
        change["send_decision"] = True
    if not ids:
        raise InvalidInput("Select at least one applicant first.", field="ids")
    if len(ids) > MAX_UPDATES:
        raise InvalidInput(f"Select at most {MAX_UPDATES} applicants at a time.", field="ids")
    if not change:
        raise InvalidInput("Choose a stage or a decision to apply.", field="stage")
    try:
        outcome = apply_updates(g.scope, parse_updates({"updates": [{"id": id_, **change} for id_ in ids]}),
                                emit_application_updated=current_app.config["EMIT_APPLICATION_UPDATED"])
    except InvalidInput as error:
        audit("applicants.bulk_update", f"{len(ids)} selected", status=400)
        if not is_partial_request():
            return _back_to_list(f"{error.message}.", "bad")
        row_errors = {problem["id"]: problem["message"] for problem in error.errors}
        rows, _ = fetch_applications_by_id(g.scope, ids)
        return render_page("applicants/partial/bulk_result.html", ok=False, message=error.message,
                           records=[application_record(row) for row in rows], row_errors=row_errors,
                           stage_names=_stage_names(), status=400)
    audit("applicants.bulk_update", f"{outcome.updated} of {len(ids)} changed")
    message = f"{outcome.updated} of {len(ids)} selected applications changed."
    if not is_partial_request():
        return _back_to_list(message, "ok")
    rows, _ = fetch_applications_by_id(g.scope, ids)
    return render_page("applicants/partial/bulk_result.html", ok=True, message=message,
                       records=[application_record(row) for row in rows], row_errors={},
                       stage_names=_stage_names())


@bp.post("/applicants/<application_id>/send-decision")
@staff_required
def applicant_send_decision(application_id: str):
    """Release the current decision to the applicant (emits decision.sent and queues the messages); a
    decision already sent is not sent again."""
    submitted(ActionForm())
    outcome = apply_updates(g.scope, parse_updates({"updates": [{"id": application_id, "send_decision": True}]}),
                            emit_application_updated=current_app.config["EMIT_APPLICATION_UPDATED"])
    sent = outcome.updated > 0
    audit("decision.send", application_id, status=200 if sent else 409)
    file = applicant_file(g.scope, application_id)
    if is_partial_request():
        return render_page("applicants/partial/decisions.html", file=file, record=file.record, sent=sent,
                           already_sent=not sent, answer_form=RecordAnswerForm())
    if not sent:
        flash("This decision had already been sent; nothing was sent again.", "info")
        return redirect(url_for("portal.applicant_detail", application_id=application_id))
    flash("The decision was sent to the applicant.", "ok")
    return redirect(url_for("portal.applicant_detail", application_id=application_id))


@bp.get("/applicants/export.csv")
@staff_required
def applicants_export():
    """Every application matching the current filters, streamed as one CSV in constant memory.

    The export is opened (filters checked, rows counted, query started) before the response exists, so a
    bad filter is a 400 page, never a broken stream; `X-Total-Rows` tells how many records must arrive.
    """
    filters = Filters.from_args(request.args)
    query = parse_application_query(filters.as_args(), kind="portal-applicants", default_limit=PAGE_SIZE)
    export = export_applications_csv(g.scope, query.filters)
    audit("applicants.export", urlencode(filters.as_args()) or "all")
    filename = f"applicants-{utcnow():%Y%m%d-%H%M}.csv"
    return Response(export, mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="{filename}"', "X-Total-Rows": str(export.total_rows)})
