"""Public pages without sign-in: the apply form and the applicant's accept/decline page for a decision."""
from __future__ import annotations

from flask import Blueprint, current_app, g, redirect, render_template, request, session, url_for
from flask_wtf import FlaskForm
from wtforms import SelectField, StringField
from wtforms.validators import AnyOf, DataRequired, Length

from core.applying import ApplicantFields, active_institution, open_cycles, submit_application
from core.audit import record_audit
from core.decisions import ANSWERABLE_DECISIONS, RESPONSES, decision_for_token, record_decision_response
from core.errors import Conflict, InvalidInput
from core.extensions import limiter

public_bp = Blueprint("public", __name__)
_SUBMITTED_KEY = "karibu_submitted_application"


def _audit(action: str, institution_id: str, target: str, status: int) -> None:
    """An audit row for a visitor's submission (actor `public`: applicants have no account)."""
    record_audit(source="public", institution_id=institution_id, actor="public", action=action, target=target,
                 status=status, request_id=g.get("request_id", ""), method=request.method, path=request.path,
                 client_ip=request.remote_addr or "", user_agent=request.user_agent.string or "")


def _public_form_limit() -> str:
    return current_app.config["PUBLIC_FORM_RATE_LIMIT"]


class ApplyForm(FlaskForm):
    cycle_id = SelectField("Admission cycle", validators=[DataRequired()], validate_choice=False)
    program_id = SelectField("Program", validators=[DataRequired()], validate_choice=False)
    first_name = StringField("First name", validators=[DataRequired(), Length(max=100)])
    last_name = StringField("Last name", validators=[DataRequired(), Length(max=100)])
    email = StringField("Email", validators=[DataRequired(), Length(max=254)])
    phone = StringField("Phone", validators=[DataRequired(), Length(max=32)])


class DecisionResponseForm(FlaskForm):
    response = StringField(validators=[DataRequired(), AnyOf(RESPONSES)])


@public_bp.route("/apply/<institution_id>", methods=["GET", "POST"])
@limiter.limit(_public_form_limit, methods=["POST"])
def apply(institution_id: str):
    institution = active_institution(institution_id)
    cycles = open_cycles(institution.id)
    form = ApplyForm()
    form.cycle_id.choices = [(cycle.id, cycle.name) for cycle in cycles]
    form.program_id.choices = sorted({program for cycle in cycles for program in cycle.programs},
                                     key=lambda program: program[1])
    status = 200
    if form.validate_on_submit():
        try:
            application = submit_application(
                institution.id, form.program_id.data, form.cycle_id.data,
                ApplicantFields(form.first_name.data, form.last_name.data, form.email.data, form.phone.data))
        except (InvalidInput, Conflict) as error:
            field = getattr(form, error.name or "", None)
            if field is not None:
                field.errors = [*field.errors, error.message]
            else:
                form.form_errors.append(error.message)
            status = error.status
            _audit("application.submit", institution.id, "", status)
        else:
            _audit("application.submit", institution.id, application.id, 302)
            session[_SUBMITTED_KEY] = {"id": application.id, "email": application.applicant.email}
            return redirect(url_for("public.applied", institution_id=institution.id))
    elif form.is_submitted():
        status = 400
    return render_template("public/apply.html", institution=institution, cycles=cycles, form=form), status


@public_bp.get("/apply/<institution_id>/submitted")
def applied(institution_id: str):
    institution = active_institution(institution_id)
    submitted = session.get(_SUBMITTED_KEY)
    if not submitted:
        return redirect(url_for("public.apply", institution_id=institution.id))
    return render_template("public/applied.html", institution=institution, submitted=submitted)


@public_bp.route("/decisions/respond/<token>", methods=["GET", "POST"])
@limiter.limit(_public_form_limit, methods=["POST"])
def respond_to_decision(token: str):
    decision = decision_for_token(token)
    institution = active_institution(decision.institution_id)
    form = DecisionResponseForm()
    answerable = decision.sent_at is not None and decision.status in ANSWERABLE_DECISIONS
    status = 200
    if form.validate_on_submit() and answerable:
        try:
            record_decision_response(decision.id, form.response.data)
        except Conflict as error:
            form.form_errors.append(error.message)
            status = error.status
            _audit(f"decision.respond.{form.response.data}", decision.institution_id, decision.id, status)
        else:
            _audit(f"decision.respond.{form.response.data}", decision.institution_id, decision.id, 302)
            return redirect(url_for("public.respond_to_decision", token=token))
    elif form.is_submitted():
        form.form_errors.append("This decision cannot be answered here." if not answerable
                                else "Choose accept or decline.")
        status = 409 if not answerable else 400
    response = current_app.make_response((render_template(
        "public/decision.html", decision=decision, application=decision.application, institution=institution,
        form=form,
        answerable=answerable), status))
    # The link itself is the applicant's credential: keep it out of caches and Referer headers.
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
