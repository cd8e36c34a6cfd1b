"""Applicants: the filtered table with cursor "load more", and one applicant's file."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone
from urllib.parse import urlsplit

from flask import Response, flash, g, redirect, request, send_file, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext, ngettext

from core.applications.applicant_file import applicant_file, application_document
from core.applications.bulkheads import Overloaded
from core.applications.list_export import ExportColumn, export_list_csv
from core.applications.list_export import field as export_field
from core.applications.documents import attachment_disposition, document_storage, served_content_type
from core.config import settings
from core.errors import InvalidInput, NotFound
from core.institutions import pipeline as stage_pipeline
from core.institutions import stage_label
from core.applications.listing.counts import count_applications
from core.applications.listing.pages import fetch_application_page, fetch_applications_by_id
from core.applications.listing.query import parse_application_query
from core.models import utcnow
from core.models.admissions import DECISIONS
from core.applications.overview import cycles, programs
from core.applications.records import application_record
from core.messages.plan import plan_decision_sends
from core.applications.state_updates import MAX_UPDATES, apply_updates, check_updates, parse_updates, send_decision
from core.applications.xlsx_export import CONTENT_TYPE as XLSX_CONTENT_TYPE
from core.applications.xlsx_export import export_list_xlsx
from core.vocabulary import VOCABULARY, words
from portal import bp
from portal.applicants.listing import (
    COLUMNS, COUNT_CAP, DEFAULT_SORT, SORT_CHOICES, ListState, confirmation_context, count_is_capped,
    list_url_from, load_more_text, match_count_text, saved_views_context, use_confirmation,
)
from portal.applicants.timeline import DECISION_LABELS, timeline_context
from portal.applicants.forms import ApplicationStateForm, BulkUpdateForm, RecordAnswerForm, SendDecisionForm
from portal.forms import submitted
from portal.rendering import datetime_text, display_zone, is_partial_request, render_page
from portal.security import audit, safe_next, staff_actor, staff_required

PAGE_SIZE = 50


@dataclass(frozen=True)
class Choices:
    cycles: list
    programs: list
    stages: list
    decisions: tuple = DECISIONS


def _stage_names(pipeline=None) -> dict[str, str]:
    return {stage.key: stage_label(stage) for stage in (pipeline or stage_pipeline(g.scope))}


def _shown_before(value: str | None) -> int:
    """How many rows the list showed before this "load more" page (`shown`; anything else counts as none)."""
    return int(value) if value and value.isdigit() and len(value) < 10 else 0


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
    try:
        total = count_applications(g.scope, query.filters, cap=COUNT_CAP)
    except Overloaded:  # no place to count now, or cut by its timeout: the page shows, its count does not
        total = None
    shown = (_shown_before(request.args.get("shown")) if cursor else 0) + len(records)
    context = dict(list_state=state, filters=filters, page=page, records=records, cursor=cursor,
                   stage_names=_stage_names(pipeline), list_url=state.url(), shown=shown,
                   load_more_label=load_more_text(shown, total))
    if is_partial_request() and cursor:
        return render_page("applicants/partial/rows.html", **context)
    choices = Choices(cycles=cycles(g.scope), programs=programs(g.scope), stages=pipeline)
    # The address bar shows only the state in use, so a copied link is short and shareable.
    headers = {"HX-Push-Url": state.url()} if is_partial_request() else {}
    return render_page("applicants/index.html", "applicants/partial/results.html", choices=choices,
                       headers=headers, oob_export=True, total=total,
                       total_capped=total is None or count_is_capped(total),
                       match_count=match_count_text(total),
                       sort_choices=SORT_CHOICES, column_choices=COLUMNS, **saved_views_context(), **context)


@bp.get("/applicants/<application_id>/documents/<document_id>")
@staff_required
def applicant_document(application_id: str, document_id: str):
    """The stored file as an attachment, under a safe name and an allowed type (never what was uploaded as is)."""
    document = application_document(g.scope, application_id, document_id)
    storage = document_storage()
    if not storage.exists(document.sha256):
        raise NotFound(_("The file of this document is missing from storage."))
    audit("document.download", document_id)
    response = send_file(storage.path(document.sha256), mimetype=served_content_type(document.content_type),
                         max_age=0)
    response.headers["Content-Disposition"] = attachment_disposition(document.filename, document.id)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _list_address(form: BulkUpdateForm) -> str:
    """The list page (with its filters) the bulk form was sent from: the form's `back` once a confirmation
    page stood in between, else the referrer."""
    referrer = urlsplit(request.referrer or "")
    same_site = referrer.netloc == request.host
    path = referrer.path + (f"?{referrer.query}" if referrer.query else "") if same_site else None
    return safe_next(form.back.data) or safe_next(path) or url_for("portal.applicants")


def _back_to_list(form: BulkUpdateForm, message: str, category: str):
    """No-JavaScript fallback of the bulk form: back to the page it was sent from, with a message."""
    flash(message, category)
    return redirect(_list_address(form))


# Why a row cannot take a bulk change, by the field at fault (labels, never field names).
_ROW_PROBLEMS = {
    "id": lazy_gettext("This application no longer exists."),
    "stage": lazy_gettext("Stage: this stage is not in your pipeline."),
    "decision": lazy_gettext("Decision: choose one of the listed decisions."),
    "send_decision": lazy_gettext("Send the decision: there is no decision to send yet."),
}


def _row_problem(problem: dict) -> str:
    field = problem["name"].rpartition(".")[2] if "." in problem["name"] else ""
    return str(_ROW_PROBLEMS.get(field, problem["message"]))


def _bulk_change(form: BulkUpdateForm) -> tuple[list[str], dict]:
    """The selected ids and the change asked for; InvalidInput when either is missing."""
    ids = list(dict.fromkeys(value for value in form.ids.data if value))
    change = {field.name: field.data for field in (form.stage, form.decision) if field.data}
    if form.send_decision.data:
        change["send_decision"] = True
    if not ids:
        raise InvalidInput(_("Select at least one applicant first."), field="ids")
    if len(ids) > MAX_UPDATES:
        raise InvalidInput(_("Select at most %(num)d applicants at a time.", num=MAX_UPDATES), field="ids")
    if not change:
        raise InvalidInput(_("Choose a stage or a decision to apply."), field="stage")
    return ids, change


@bp.post("/applicants/bulk")
@staff_required
def applicants_bulk():
    """Apply a stage or decision change to the selected rows, all or nothing, once the staff member has
    answered its confirmation (this form again with the one-time `confirmation` token)."""
    form = submitted(BulkUpdateForm())
    ids, change = _bulk_change(form)
    if form.cancel.data:
        message = _("Nothing was changed or sent.")
        if not is_partial_request():
            return _back_to_list(form, message, "info")
        return render_page("applicants/partial/bulk_result.html", ok=True, message=message, records=[],
                           problems=[], stage_names={})
    batch = parse_updates({"updates": [{"id": id_, **change} for id_ in ids]})
    target = "ids:" + ",".join(sorted(ids))
    try:
        if not use_confirmation(form.confirmation.data, target, change, len(ids)):
            check_updates(g.scope, batch)  # a change that cannot be made is refused before any confirmation
            plan = plan_decision_sends(g.scope, ids, change.get("decision")) if change.get("send_decision") else None
            return render_page("applicants/bulk_confirm.html", "applicants/partial/bulk_confirm.html",
                               ids=ids, form=form, back=_list_address(form),
                               **confirmation_context(target, change, len(ids), plan,
                                                      renewed=bool(form.confirmation.data)))
        outcome = apply_updates(g.scope, batch, actor=staff_actor(),
                                emit_application_updated=settings().EMIT_APPLICATION_UPDATED)
    except InvalidInput as error:
        audit("applicants.bulk_update", f"{len(ids)} selected", status=400)
        return _bulk_refused(form, ids, error)
    audit("applicants.bulk_update", f"{outcome.updated} of {len(ids)} changed")
    message, tone = _bulk_done_message(change, outcome.updated, len(ids))
    if not is_partial_request():
        return _back_to_list(form, message, tone)
    rows, _found = fetch_applications_by_id(g.scope, ids)
    return render_page("applicants/partial/bulk_result.html", ok=True, applied=True, message=message, tone=tone,
                       records=[application_record(row) for row in rows], problems=[],
                       stage_names=_stage_names())


def _bulk_done_message(change: dict, changed: int, selected: int) -> tuple[str, str]:
    """The sentence after a bulk change and its tone: "ok" when rows changed, "info" when none needed to; the
    rows left as they were are said to be so already (the only reason a valid change leaves a row as it was)."""
    if changed == selected:
        return ngettext("%(changed)d of %(num)d selected application changed.",
                        "%(changed)d of %(num)d selected applications changed.", selected, changed=changed), "ok"
    if "stage" in change and "decision" in change:
        already = _("already at the chosen stage with the chosen decision")
    elif "stage" in change:
        already = _("already at the chosen stage")
    else:
        already = _("already with the chosen decision")
    if changed == 0:
        return ngettext("Nothing changed: the selected application was %(already)s.",
                        "Nothing changed: the %(num)d selected applications were %(already)s.", selected,
                        already=already), "info"
    return ngettext("%(changed)d of %(selected)d selected applications changed; the other one was %(already)s.",
                    "%(changed)d of %(selected)d selected applications changed; the %(num)d others were "
                    "%(already)s.", selected - changed, changed=changed, selected=selected, already=already), "ok"


def _bulk_refused(form: BulkUpdateForm, ids: list[str], error: InvalidInput):
    """Nothing changed: one sentence, the rows at fault listed with why, and the selection left as it was
    (only the rows at fault are redrawn, still selected, so the valid ones keep their ticks too)."""
    reasons: dict[str, list[str]] = {}
    for problem in error.errors:
        reasons.setdefault(problem.get("id"), []).append(_row_problem(problem))
    rows, _found = fetch_applications_by_id(g.scope, [id_ for id_ in ids if id_ in reasons])
    records = [application_record(row) for row in rows]
    invalid = len(reasons)
    message = ngettext("Nothing was changed: %(num)d of %(total)d selected applications can't take this change.",
                       "Nothing was changed: %(num)d of %(total)d selected applications can't take this change.",
                       invalid, total=len(ids))
    problems = [(record, " ".join(reasons[record["id"]])) for record in records]
    if not is_partial_request():
        details = "; ".join(f"{record['personal']['first_name']} {record['personal']['last_name']}: {reason}"
                            for record, reason in problems)
        return _back_to_list(form, f"{message} {details}".strip(), "bad")
    return render_page("applicants/partial/bulk_result.html", ok=False, message=message, records=records,
                       problems=problems, row_errors={record["id"]: reason for record, reason in problems},
                       stage_names=_stage_names(), status=400)


def _state_form(record: dict, pipeline) -> ApplicationStateForm:
    form = ApplicationStateForm(data={"stage": record["application"]["stage"],
                                      "decision": record["application"]["decision"]})
    form.stage.choices = [(stage.key, stage_label(stage)) for stage in pipeline]
    form.decision.choices = [(value, DECISION_LABELS[value]) for value in DECISIONS]
    return form


def file_page(application_id: str, **extra):
    """The context of an applicant's file page (`extra` added or replacing)."""
    file = applicant_file(g.scope, application_id)
    pipeline = stage_pipeline(g.scope)
    context = dict(file=file, record=file.record, stage_names=_stage_names(pipeline),
                   answer_form=RecordAnswerForm(), state_form=_state_form(file.record, pipeline),
                   back_url=list_url_from(request.args.get("back")), **timeline_context(file))
    return {**context, **extra}


def _file_address(application_id: str) -> str:
    """The file again after a save (POST-redirect-GET), keeping its way back to the list as it was (filters,
    sort, page): `back` only when it is the applicant list of this site, so no post redirects elsewhere."""
    return url_for("portal.applicant_detail", application_id=application_id,
                   back=list_url_from(request.args.get("back")))


@bp.get("/applicants/<application_id>")
@staff_required
def applicant_detail(application_id: str):
    context = file_page(application_id)
    audit("applicant.view", application_id)
    return render_page("applicants/detail.html", **context)


@bp.post("/applicants/<application_id>/state")
@staff_required
def applicant_change_state(application_id: str):
    """Stage and decision edited in place on the file: the rules, history and audit of every other change."""
    form = ApplicationStateForm()
    if not form.validate_on_submit():
        raise InvalidInput(_("The form expired; reload the page and try again."), field="stage")
    change = {name: value for name, value in (("stage", form.stage.data), ("decision", form.decision.data))
              if value}
    try:
        outcome = apply_updates(g.scope, parse_updates({"updates": [{"id": application_id, **change}]}),
                                actor=staff_actor(),
                                emit_application_updated=settings().EMIT_APPLICATION_UPDATED)
    except InvalidInput as error:
        if any(problem["name"].endswith(".id") for problem in error.errors):
            raise NotFound(_("Application not found")) from None
        audit("applicant.change_state", application_id, status=400)
        errors = {problem["name"].rpartition(".")[2]: _row_problem(problem) for problem in error.errors}
        context = file_page(application_id, state_errors=errors)
        context["state_form"].stage.data, context["state_form"].decision.data = form.stage.data, form.decision.data
        if not is_partial_request():
            return render_page("applicants/detail.html", status=400, **context)
        return render_page("applicants/partial/state.html", status=400, **context)
    audit("applicant.change_state", application_id)
    notice = _("Saved.") if outcome.updated else _("Nothing to change: the stage and decision were already these.")
    if not is_partial_request():
        flash(notice, "ok")
        return redirect(_file_address(application_id))
    return render_page("applicants/partial/state.html", state_notice=notice, oob=True,
                       **file_page(application_id))


@bp.post("/applicants/<application_id>/send-decision")
@staff_required
def applicant_send_decision(application_id: str):
    """Ask to confirm sending the current decision, then (with `confirm`) send it: decision.sent and its
    messages; a decision already sent is a 409 saying when."""
    form = submitted(SendDecisionForm())
    if not form.confirm.data:
        check_updates(g.scope, parse_updates({"updates": [{"id": application_id, "send_decision": True}]}))
        context = file_page(application_id)
        current = context["file"].current_decision
        if current is None or current.sent_at is None:  # else: the answer below says when it was sent
            context["send_plan"] = plan_decision_sends(g.scope, [application_id])
            if not is_partial_request():
                return render_page("applicants/detail.html", **context)
            return render_page("applicants/partial/decisions.html", **context)
    outcome = send_decision(g.scope, application_id, actor=staff_actor(),
                            emit_application_updated=settings().EMIT_APPLICATION_UPDATED)
    audit("decision.send", application_id, status=200 if outcome.sent else 409)
    if outcome.sent:
        message = _("The decision “%(decision)s” was sent to the applicant.",
                    decision=DECISION_LABELS[outcome.decision.status])
    else:
        message = _("Nothing was sent: this decision was already sent on %(date)s.",
                    date=datetime_text(outcome.decision.sent_at))
    if not is_partial_request():
        flash(message, "ok" if outcome.sent else "info")
        return redirect(_file_address(application_id))
    return render_page("applicants/partial/decision_sent.html", send_notice=message, send_ok=outcome.sent,
                       status=200 if outcome.sent else 409, **file_page(application_id))


def _export_request():
    """The list as the user sees it (filters checked, sort, columns) and the export's columns, in words."""
    state = ListState.from_args(request.args)
    query = parse_application_query(state.filters.as_args(), kind="portal-applicants", default_limit=PAGE_SIZE)
    return state, query, _export_columns(state)


def _export_columns(state: ListState) -> list[ExportColumn]:
    """The export's columns in the list's order (applicant, application id, chosen columns), headers and values
    already in the user's language and display zone."""
    zone = display_zone()
    stage_names = _stage_names()
    decisions = {code: words("decision", code) for code in VOCABULARY["decision"]}
    paid_words = {True: _("Paid"), False: _("Unpaid")}
    yes_no = {True: words("yes_no", True), False: words("yes_no", False)}
    labels = dict(COLUMNS)
    first, last = export_field("personal.first_name"), export_field("personal.last_name")

    def words_of(name: str, known: dict):
        value = export_field(name)
        return lambda row: known.get(value(row), value(row))

    def in_zone(name: str):
        value = export_field(name)
        return lambda row: (value(row).replace(tzinfo=timezone.utc).astimezone(zone).replace(tzinfo=None)
                            if value(row) is not None else None)

    def timed(key: str) -> str:
        return _("%(column)s (%(zone)s)", column=labels[key], zone=zone.key)

    optional = {
        "program": ExportColumn(str(labels["program"]), export_field("application.program_name")),
        "cycle": ExportColumn(str(labels["cycle"]), export_field("application.cycle_name")),
        "stage": ExportColumn(str(labels["stage"]), words_of("application.stage", stage_names)),
        "decision": ExportColumn(str(labels["decision"]), words_of("application.decision", decisions)),
        "paid": ExportColumn(str(labels["paid"]), words_of("payment.paid", paid_words)),
        "enrolled": ExportColumn(str(labels["enrolled"]), words_of("application.enrolled", yes_no)),
        "submitted": ExportColumn(timed("submitted"), in_zone("application.submitted_at")),
        "updated": ExportColumn(timed("updated"), in_zone("application.updated_at")),
    }
    return [ExportColumn(_("Applicant"), lambda row: f"{first(row) or ''} {last(row) or ''}".strip()),
            ExportColumn(_("Application ID"), export_field("id")),
            *(optional[key] for key in state.columns)]


def _export_filename(suffix: str) -> str:
    """`applicants-2026-11-26.csv`: the day in the display zone, one name per kind of file."""
    today = utcnow().replace(tzinfo=timezone.utc).astimezone(display_zone()).date()
    return f"applicants-{today.isoformat()}{suffix}"


@bp.get("/applicants/export.csv")
@staff_required
def applicants_export():
    """The list's matching rows, columns and sort as one streamed CSV (`?excel=1`: with a UTF-8 byte order mark),
    `X-Total-Rows` giving the record count; a bad filter is a 400 page."""
    state, query, columns = _export_request()
    for_excel = request.args.get("excel") == "1"
    export = export_list_csv(g.scope, query.filters, state.sort, columns, byte_order_mark=for_excel)
    audit("applicants.export", state.query_string() or "all")
    filename = _export_filename("-excel.csv" if for_excel else ".csv")
    return Response(export, mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="{filename}"', "X-Total-Rows": str(export.total_rows)})


@bp.get("/applicants/export.xlsx")
@staff_required
def applicants_export_xlsx():
    """The same as an Excel workbook with dates as dates, written in constant memory to a temporary file
    and streamed from it (core.applications.xlsx_export)."""
    state, query, columns = _export_request()
    export = export_list_xlsx(g.scope, query.filters, state.sort, columns, sheet_name=_("Applicants"))
    audit("applicants.export_xlsx", state.query_string() or "all")
    filename = _export_filename(".xlsx")
    return Response(export, mimetype=XLSX_CONTENT_TYPE, direct_passthrough=True, headers={
        "Content-Disposition": f'attachment; filename="{filename}"', "Content-Length": str(export.size),
        "X-Total-Rows": str(export.total_rows)})
