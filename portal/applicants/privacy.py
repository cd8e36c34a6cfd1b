"""Data-subject requests from the portal (admins): the page lists every record of the person and what an erase
would do, then exports all of it as a zip, or erases it."""
from __future__ import annotations

from flask import Response, flash, g, redirect, stream_with_context, url_for
from flask_babel import ngettext
from flask_login import current_user

from core.applications.applicant_file import applicant_file
from core.audit.recording import AuditEntry
from core.errors import Conflict, InvalidInput
from core.privacy.subject_requests import awaiting_answer, collect, erase, export_zip, find_applicant
from portal import bp
from portal.applicants.forms import DataErasureForm, DataExportForm
from portal.rendering import render_page
from portal.security import admin_required


def _declare_audit(entry: AuditEntry) -> None:
    """The request's audit row (written after the response by wsgi.register_audit)."""
    g.audit = entry


def _page(application_id: str, export_form=None, erase_form=None, status: int = 200):
    file = applicant_file(g.scope, application_id)
    data = collect(g.scope, find_applicant(g.scope, application_id))
    return render_page("applicants/privacy.html", file=file, record=file.record, data=data,
                       waiting=awaiting_answer(data), export_form=export_form or DataExportForm(formdata=None),
                       erase_form=erase_form or DataErasureForm(formdata=None), status=status)


@bp.get("/applicants/<application_id>/privacy")
@admin_required
def applicant_privacy(application_id: str):
    return _page(application_id)


@bp.post("/applicants/<application_id>/privacy/export")
@admin_required
def applicant_privacy_export(application_id: str):
    form = DataExportForm()
    if not form.validate_on_submit():
        return _page(application_id, export_form=form, status=400)
    applicant, archive = export_zip(g.scope, application_id, actor=current_user.email, reason=form.reason.data,
                                    source="portal", audit=_declare_audit)
    return Response(stream_with_context(archive), mimetype="application/zip", headers={
        "Content-Disposition": f'attachment; filename="karibu-{applicant.id}.zip"', "Cache-Control": "no-store"})


@bp.post("/applicants/<application_id>/privacy/erase")
@admin_required
def applicant_privacy_erase(application_id: str):
    form = DataErasureForm()
    if not form.validate_on_submit():
        return _page(application_id, erase_form=form, status=400)
    try:
        report = erase(g.scope, application_id, actor=current_user.email, reason=form.reason.data,
                       source="portal", force=form.force.data, audit=_declare_audit)
    except (Conflict, InvalidInput) as error:
        form.form_errors.append(error.message)
        return _page(application_id, erase_form=form, status=error.status)
    flash(ngettext("The personal data of %(num)d record was erased (%(documents)d document(s) deleted). "
                   "The applications stay as anonymous records.",
                   "The personal data of %(num)d records was erased (%(documents)d document(s) deleted). "
                   "The applications stay as anonymous records.",
                   len(report.applicant_ids), documents=report.documents_deleted), "ok")
    return redirect(url_for("portal.applicant_detail", application_id=application_id))
