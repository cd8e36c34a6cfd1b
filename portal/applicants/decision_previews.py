"""Staff previews of a decision's email and answer page, in the applicant's language; nothing is written or sent."""
from __future__ import annotations

from flask import g, make_response, request
from flask_babel import gettext as _

from core.applications.applicant_file import applicant_file
from core.errors import InvalidInput
from core.i18n import supported_language
from core.messages.composition import preview_decision_email
from core.models import Application
from portal import bp
from portal.applicants.timeline import DECISION_LABELS
from portal.messages.views import email_preview_policy
from portal.public.views import answer_page_preview
from portal.rendering import render_page
from portal.security import audit, staff_required


def _previewed_decision(application_id: str) -> str:
    """`?decision=` when given, else the application's current decision."""
    decision = request.args.get("decision") or applicant_file(g.scope, application_id).record["application"]["decision"]
    if decision not in DECISION_LABELS or decision == "none":
        raise InvalidInput(_("Set a decision first: there is nothing to preview."), parameter="decision")
    return decision


@bp.get("/applicants/<application_id>/preview/email")
@staff_required
def applicant_email_preview(application_id: str):
    decision = _previewed_decision(application_id)
    preview = preview_decision_email(g.scope, application_id, decision)
    audit("decision.preview", application_id)
    return render_page("applicants/email_preview.html", preview=preview, application_id=application_id,
                       decision=decision, decision_label=DECISION_LABELS[decision])


@bp.get("/applicants/<application_id>/preview/email.html")
@staff_required
def applicant_email_preview_html(application_id: str):
    """The HTML part on a page of its own, under the sandboxing policy of sent messages' HTML."""
    preview = preview_decision_email(g.scope, application_id, _previewed_decision(application_id))
    response = make_response(preview.html)
    response.mimetype = "text/html"
    response.headers["Content-Security-Policy"] = email_preview_policy()
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.get("/applicants/<application_id>/preview/answer-page")
@staff_required
def applicant_answer_page_preview(application_id: str):
    decision = _previewed_decision(application_id)
    application = g.scope.require(Application, application_id, "Application")
    language = (supported_language(request.args.get("lang")) or supported_language(application.applicant.language)
                or g.scope.institution().default_language)
    audit("decision.preview", application_id)
    return answer_page_preview(application, decision, language)
