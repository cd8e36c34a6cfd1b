"""Public pages without sign-in: the apply form and the applicant's accept/decline page for a decision."""
from __future__ import annotations

from flask import Blueprint, current_app, g, redirect, render_template, request, session, url_for
from flask_babel import gettext, lazy_gettext
from flask_wtf import FlaskForm
from wtforms import SelectField, StringField
from wtforms.validators import AnyOf, DataRequired, Length

from core.applications.applying import ApplicantFields, active_institution, open_cycles, submit_application
from core.audit.recording import AuditEntry
from core.applications.decision_answers import ANSWERABLE_DECISIONS, RESPONSES, decision_for_token, record_decision_response
from core.config import settings
from core.errors import Conflict, InvalidInput
from core.i18n import LANGUAGES
from core.scoping import InstitutionScope
from portal.i18n import use_language, visitor_language
from portal.limiter import limiter

public_bp = Blueprint("public", __name__)
_SUBMITTED_KEY = "karibu_submitted_application"


def _audit(action: str, institution_id: str, target: str) -> None:
    """Declare the audit row of a visitor's submission (actor `public`: applicants have no account)."""
    g.audit = AuditEntry(source="public", institution_id=institution_id, actor="public", action=action,
                         target=target)


def _public_form_limit() -> str:
    return settings().PUBLIC_FORM_RATE_LIMIT


@public_bp.context_processor
def _languages() -> dict:
    return {"public_languages": LANGUAGES}


class ApplyForm(FlaskForm):
    cycle_id = SelectField(lazy_gettext("Admission cycle"), validators=[DataRequired()], validate_choice=False)
    program_id = SelectField(lazy_gettext("Program"), validators=[DataRequired()], validate_choice=False)
    first_name = StringField(lazy_gettext("First name"), validators=[DataRequired(), Length(max=100)])
    last_name = StringField(lazy_gettext("Last name"), validators=[DataRequired(), Length(max=100)])
    email = StringField(lazy_gettext("Email"), validators=[DataRequired(), Length(max=254)])
    phone = StringField(lazy_gettext("Phone"), validators=[DataRequired(), Length(max=32)])
    # Each language in its own name, so a reader of any of them finds theirs.
    language = SelectField(lazy_gettext("Language of our messages to you"), choices=list(LANGUAGES.items()),
                           validators=[DataRequired(), AnyOf(list(LANGUAGES))])


class DecisionResponseForm(FlaskForm):
    response = StringField(validators=[DataRequired(), AnyOf(RESPONSES)])


@public_bp.route("/apply/<institution_id>", methods=["GET", "POST"])
@limiter.limit(_public_form_limit, methods=["POST"])
def apply(institution_id: str):
    scope = InstitutionScope(institution_id)
    institution = active_institution(scope)
    language = use_language(visitor_language(institution.default_language))
    cycles = open_cycles(scope)
    form = ApplyForm(language=language)
    form.cycle_id.choices = [(cycle.id, cycle.name) for cycle in cycles]
    form.program_id.choices = sorted({program for cycle in cycles for program in cycle.programs},
                                     key=lambda program: program[1])
    status = 200
    if form.validate_on_submit():
        try:
            application = submit_application(
                scope, form.program_id.data, form.cycle_id.data,
                ApplicantFields(form.first_name.data, form.last_name.data, form.email.data, form.phone.data),
                language=form.language.data)
        except (InvalidInput, Conflict) as error:
            field = getattr(form, error.name or "", None)
            if field is not None:
                field.errors = [*field.errors, error.message]
            else:
                form.form_errors.append(error.message)
            status = error.status
            _audit("application.submit", institution.id, "")
        else:
            _audit("application.submit", institution.id, application.id)
            session[_SUBMITTED_KEY] = {"id": application.id, "email": application.applicant.email,
                                       "language": form.language.data}
            return redirect(url_for("public.applied", institution_id=institution.id))
    elif form.is_submitted():
        status = 400
    return render_template("public/apply.html", institution=institution, cycles=cycles, form=form), status


@public_bp.get("/apply/<institution_id>/submitted")
def applied(institution_id: str):
    institution = active_institution(InstitutionScope(institution_id))
    submitted = session.get(_SUBMITTED_KEY)
    if not submitted:
        return redirect(url_for("public.apply", institution_id=institution.id))
    use_language(request.args.get("lang") or submitted.get("language")
                 or visitor_language(institution.default_language))
    return render_template("public/applied.html", institution=institution, submitted=submitted)


@public_bp.route("/decisions/respond/<token>", methods=["GET", "POST"])
@limiter.limit(_public_form_limit, methods=["POST"])
def respond_to_decision(token: str):
    decision = decision_for_token(token)
    institution = active_institution(InstitutionScope(decision.institution_id))
    # The applicant's own language (chosen when applying) unless they pick another with ?lang=.
    use_language(request.args.get("lang") or decision.application.applicant.language
                 or institution.default_language)
    form = DecisionResponseForm()
    answerable = decision.sent_at is not None and decision.status in ANSWERABLE_DECISIONS
    status = 200
    if form.validate_on_submit() and answerable:
        try:
            record_decision_response(decision.id, form.response.data)
        except Conflict as error:
            form.form_errors.append(error.message)
            status = error.status
            _audit(f"decision.respond.{form.response.data}", decision.institution_id, decision.id)
        else:
            _audit(f"decision.respond.{form.response.data}", decision.institution_id, decision.id)
            return redirect(url_for("public.respond_to_decision", token=token, lang=request.args.get("lang")))
    elif form.is_submitted():
        form.form_errors.append(gettext("This decision cannot be answered here.") if not answerable
                                else gettext("Choose accept or decline."))
        status = 409 if not answerable else 400
    response = current_app.make_response((render_template(
        "public/decision.html", decision=decision, application=decision.application, institution=institution,
        form=form,
        answerable=answerable), status))
    # The link itself is the applicant's credential: keep it out of caches and Referer headers.
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
