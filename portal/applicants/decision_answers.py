"""Staff record an applicant's answer to a sent decision, given by phone or in person (decision.responded)."""
from __future__ import annotations

from flask import flash, g, redirect, url_for
from flask_babel import gettext as _

from core.applications.applicant_file import applicant_file
from core.applications.decision_answers import record_decision_response_by_staff
from core.errors import InvalidInput, NotFound
from portal import bp
from portal.applicants.timeline import DECISION_LABELS
from portal.applicants.forms import RecordAnswerForm
from portal.applicants.views import file_page
from portal.rendering import is_partial_request, render_page
from portal.security import audit, staff_actor, staff_required

@bp.post("/applicants/<application_id>/decisions/<decision_id>/answer")
@staff_required
def applicant_record_answer(application_id: str, decision_id: str):
    """Ask to confirm the chosen answer (naming the applicant, the decision and the answer), then (with
    `confirm`) record it: decision.responded."""
    form = RecordAnswerForm()
    if not form.validate_on_submit():
        raise InvalidInput(" ".join(map(str, form.response.errors))
                           or _("The form expired; reload the page and try again."), field="response")
    file = applicant_file(g.scope, application_id)
    decision = next((decision for decision in file.decisions if decision.id == decision_id), None)
    if decision is None:
        raise NotFound(_("Decision not found"))
    if not form.confirm.data and decision.response is None:
        context = dict(file=file, record=file.record, answer_form=form, decision_labels=DECISION_LABELS,
                       answer_to_confirm=decision)
        if is_partial_request():
            return render_page("applicants/partial/decisions.html", **context)
        return render_page("applicants/detail.html",
                           **file_page(application_id, answer_to_confirm=decision, answer_form=form))
    recorded = record_decision_response_by_staff(g.scope, decision_id, form.response.data, staff_actor())[1]
    audit(f"decision.respond.{form.response.data}", decision_id, status=200 if recorded else 409)
    recorded_text = {"accepted": _("Recorded: the applicant accepted the decision."),
                     "declined": _("Recorded: the applicant declined the decision.")}
    text = recorded_text[form.response.data] if recorded else _("This answer was already recorded.")
    if is_partial_request():
        file = applicant_file(g.scope, application_id)
        return render_page("applicants/partial/decisions.html", file=file, record=file.record,
                           answer_form=RecordAnswerForm(formdata=None), answered=text,
                           decision_labels=DECISION_LABELS)
    flash(text, "ok")
    return redirect(url_for("portal.applicant_detail", application_id=application_id))
