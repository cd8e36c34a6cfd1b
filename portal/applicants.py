"""Applicants: the filtered table with cursor "load more", and one applicant's file."""
from __future__ import annotations

from dataclasses import dataclass, fields

from flask import g, request, send_file, url_for

from core.applicant_file import applicant_file, application_document
from core.documents import document_storage
from core.listing import fetch_application_page, parse_application_query
from core.models.admissions import DECISIONS
from core.overview import cycles, programs, stages
from core.records import application_record
from portal import bp
from portal.rendering import is_partial_request, render_page
from portal.security import audit, staff_required

PAGE_SIZE = 50
EVENT_LABELS = {
    "application.submitted": "Application submitted",
    "application.updated": "Application updated",
    "decision.sent": "Decision sent",
    "decision.responded": "Applicant answered the decision",
    "payment.completed": "Payment completed",
}


@dataclass(frozen=True)
class Filters:
    """The table's filters as they appear in the URL (empty values dropped, so links stay short)."""
    q: str = ""
    cycle: str = ""
    program: str = ""
    stage: str = ""
    decision: str = ""
    paid: str = ""
    enrolled: str = ""
    submitted_after: str = ""
    submitted_before: str = ""

    @classmethod
    def from_args(cls, args) -> "Filters":
        return cls(**{field.name: (args.get(field.name) or "").strip() for field in fields(cls)})

    def as_args(self) -> dict[str, str]:
        return {name: value for name, value in vars(self).items() if value}

    @property
    def active(self) -> bool:
        return bool(self.as_args())


@dataclass(frozen=True)
class Choices:
    cycles: list
    programs: list
    stages: list
    decisions: tuple = DECISIONS


def _page(filters: Filters, cursor: str | None):
    args = filters.as_args()
    if cursor:
        args["cursor"] = cursor
    query = parse_application_query(args, kind="portal-applicants", default_limit=PAGE_SIZE)
    page = fetch_application_page(g.scope, query)
    return page, [application_record(row) for row in page.rows]


@bp.get("/applicants")
@staff_required
def applicants():
    filters = Filters.from_args(request.args)
    cursor = request.args.get("cursor") or None
    page, records = _page(filters, cursor)
    pipeline = stages(g.scope.institution_id)
    context = dict(filters=filters, page=page, records=records, cursor=cursor,
                   stage_names={stage.key: stage.name for stage in pipeline})
    if is_partial_request() and cursor:
        return render_page("applicants/partial/rows.html", **context)
    choices = Choices(cycles=cycles(g.scope), programs=programs(g.scope), stages=pipeline)
    # The address bar shows only the filters in use, so a copied link is short and shareable.
    headers = {"HX-Push-Url": url_for("portal.applicants", **filters.as_args())} if is_partial_request() else {}
    return render_page("applicants/index.html", "applicants/partial/results.html", choices=choices,
                       headers=headers, oob_export=True, **context)


@bp.get("/applicants/<application_id>")
@staff_required
def applicant_detail(application_id: str):
    file = applicant_file(g.scope, application_id)
    audit("applicant.view", application_id)
    stage_names = {stage.key: stage.name for stage in stages(g.scope.institution_id)}
    return render_page("applicants/detail.html", file=file, record=file.record, event_labels=EVENT_LABELS,
                       stage_names=stage_names)


@bp.get("/applicants/<application_id>/documents/<document_id>")
@staff_required
def applicant_document(application_id: str, document_id: str):
    document = application_document(g.scope, application_id, document_id)
    audit("document.download", document_id)
    return send_file(document_storage().path(document.sha256), mimetype=document.content_type,
                     as_attachment=True, download_name=document.filename, max_age=0)
