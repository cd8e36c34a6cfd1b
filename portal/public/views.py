"""Public pages without sign-in, in the institution's identity: the apply form, its confirmation, and the
applicant's answer to a decision in two steps (choose, then confirm; only the confirmation records)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from flask import Blueprint, abort, current_app, g, redirect, render_template, request, session, url_for
from flask_babel import get_locale, gettext, lazy_gettext, refresh
from flask_wtf import FlaskForm
from wtforms import SelectField, StringField
from wtforms.validators import AnyOf, DataRequired

from core.applications.applying import (
    PHONE_IGNORED, PHONE_PATTERN, ApplicantFields, active_institution, open_cycles, phone_format, submit_application,
)
from core.applications.decision_answers import ANSWERABLE_DECISIONS, RESPONSES, decision_for_token, record_decision_response
from core.audit.recording import AuditEntry
from core.config import settings
from core.errors import Conflict, InvalidInput, NotFound
from core.i18n import DEFAULT_LANGUAGE, LANGUAGES
from core.institutions.identity import ApplicantIdentity, applicant_identity
from core.models import Decision, utcnow
from core.scoping import InstitutionScope
from core.timefmt import applicant_date, parse_utc
from portal.i18n import use_language, visitor_language
from portal.limiter import limiter

public_bp = Blueprint("public", __name__)
_SUBMITTED_KEY = "karibu_submitted_application"
_COLOUR_FILE = re.compile(r"[0-9a-f]{6}")  # the whole name (fullmatch): no trailing newline


def _audit(action: str, institution_id: str, target: str) -> None:
    """Declare the audit row of a visitor's submission (actor `public`: applicants have no account)."""
    g.audit = AuditEntry(source="public", institution_id=institution_id, actor="public", action=action,
                         target=target)


def _public_form_limit() -> str:
    return settings().PUBLIC_FORM_RATE_LIMIT


def _language_url(code: str) -> str:
    """This page (its query kept, e.g. the chosen answer) in another language. The path's own values win over a
    query argument of the same name (`?token=` beside a link's token)."""
    return url_for(request.endpoint, **{**request.args.to_dict(), "lang": code, **(request.view_args or {})})


@public_bp.context_processor
def _languages() -> dict:
    return {"public_languages": LANGUAGES, "language_url": _language_url}


def _render(template: str, identity: ApplicantIdentity | None, status: int = 200, **context):
    """An applicant page in the institution's identity; `show_date` is the one date format applicants read."""
    zone = identity.time_zone if identity is not None else "UTC"

    def show_date(value: datetime | date) -> str:
        return applicant_date(value, zone, g.page_language)

    return current_app.make_response((render_template(template, identity=identity, show_date=show_date,
                                                      **context), status))


def _private(response):
    """The answer link is the applicant's credential: keep every step out of caches and Referer headers."""
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@public_bp.after_request
def _answer_pages_private(response):
    """Every answer of the answer flow (its 400s and 404s too, CSRF and input refusals included) is private."""
    if request.endpoint in ("public.respond_to_decision", "public.confirm_decision_response"):
        _private(response)
    return response


@public_bp.get("/applicant-colours/<colour>.css")
def brand_colours(colour: str):
    """The brand colour of an applicant page as a stylesheet (the CSP allows no inline style); the colour is
    the file's name, so a new colour is a new URL and each file can be cached for good."""
    if not _COLOUR_FILE.fullmatch(colour):
        abort(404)
    response = current_app.make_response(f":root {{ --brand: #{colour}; }}\n")
    response.mimetype = "text/css"
    response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
    return response


class ApplyForm(FlaskForm):
    """The apply form. Its fields are checked by core (`submit_application`), all together, so every mistake
    shows at once; only the CSRF token is checked here."""
    cycle_id = SelectField(lazy_gettext("Admission cycle"), validate_choice=False)
    program_id = SelectField(lazy_gettext("Program"), validate_choice=False)
    first_name = StringField(lazy_gettext("First name"))
    last_name = StringField(lazy_gettext("Last name"))
    email = StringField(lazy_gettext("Email"))
    phone = StringField(lazy_gettext("Phone"))
    # Each language in its own name, so a reader of any of them finds theirs.
    language = SelectField(lazy_gettext("Language of our messages to you"), choices=list(LANGUAGES.items()),
                           validate_choice=False)


def _with_placeholder(choices: list[tuple[str, str]], placeholder: str) -> list[tuple[str, str]]:
    """Several choices start on an empty "Choose …" option, so none is picked for the applicant; one is given."""
    return [("", placeholder), *choices] if len(choices) > 1 else choices


def _phone_message() -> str:
    return gettext("Enter a phone number of 7 to 15 digits, which may start with +.")


def _problem_message(rule: str, limit: int | None = None) -> str:
    """A core problem's rule in the applicant's language."""
    messages = {
        "required": gettext("This is required."),
        "too_long": gettext("Use at most %(limit)d characters.", limit=limit or 0),
        "email": gettext("Enter an email address such as name@example.com."),
        "phone": _phone_message(),
        "closed": gettext("This admission cycle is no longer open for applications: choose another."),
        "not_in_cycle": gettext("This program is not offered in the chosen admission cycle."),
        "duplicate": gettext("You have already applied to this program in this cycle with this email address."),
    }
    return messages.get(rule, gettext("Choose one of the options in the list."))


def field_error(field, message: str) -> str:
    """An error as the applicant reads it: the field's label, then what to do."""
    return gettext("%(field)s: %(problem)s", field=field.label.text, problem=message)


def _show_problems(form: ApplyForm, error: InvalidInput | Conflict) -> None:
    """Each problem of a refused submission at its field, in the applicant's language."""
    for entry in error.errors:
        field = form._fields.get(entry["name"])
        if field is None or "rule" not in entry:
            continue
        field.errors = [*field.errors, field_error(field, _problem_message(entry["rule"], entry.get("limit")))]
    if not error.errors:  # not about a field: the institution cannot take applications yet
        form.form_errors.append(gettext("Applications cannot be received right now. Please try again later."))


class DecisionResponseForm(FlaskForm):
    response = StringField(validators=[DataRequired(), AnyOf(RESPONSES)])


class FormNotFound(Exception):
    """The address of an application form names no active institution (a mistyped or old link)."""


def _form_institution(scope: InstitutionScope):
    """The institution of an application form's address; FormNotFound (an applicant's 404) when there is none."""
    try:
        return active_institution(scope)
    except NotFound:
        raise FormNotFound() from None


@public_bp.errorhandler(FormNotFound)
def _form_not_found(error: FormNotFound):
    """The 404 of a mistyped form address, for the applicant: in their language, naming no institution and no
    staff page."""
    use_language(visitor_language(None))
    return _render("public/form_not_found.html", None, 404)


@public_bp.route("/apply/<institution_id>", methods=["GET", "POST"])
@limiter.limit(_public_form_limit, methods=["POST"])
def apply(institution_id: str):
    scope = InstitutionScope(institution_id)
    institution = _form_institution(scope)
    language = use_language(visitor_language(institution.default_language))
    cycles = open_cycles(scope)
    form = ApplyForm(language=language)
    form.cycle_id.choices = _with_placeholder([(cycle.id, cycle.name) for cycle in cycles],
                                              gettext("Choose an admission cycle"))
    form.program_id.choices = _with_placeholder(
        sorted({program for cycle in cycles for program in cycle.programs}, key=lambda program: program[1]),
        gettext("Choose a program"))
    status = 200
    if form.is_submitted():
        if not form.validate():
            form.form_errors.append(gettext("This page expired. Please fill in the form again."))
            status = 400
        else:
            try:
                application = submit_application(
                    scope, form.program_id.data, form.cycle_id.data,
                    ApplicantFields(form.first_name.data, form.last_name.data, form.email.data, form.phone.data),
                    language=form.language.data, phone_required=True)
            except (InvalidInput, Conflict) as error:
                _show_problems(form, error)
                status = error.status
                _audit("application.submit", institution.id, "")
            else:
                _audit("application.submit", institution.id, application.id)
                session[_SUBMITTED_KEY] = {"id": application.id, "reference": application.reference,
                                           "email": application.applicant.email, "language": form.language.data,
                                           "submitted_at": application.submitted_at.isoformat()}
                return redirect(url_for("public.applied", institution_id=institution.id))
    return _render("public/apply.html", applicant_identity(institution), status, cycles=cycles, form=form,
                   phone_format=phone_format(scope), phone_pattern=PHONE_PATTERN.pattern,
                   phone_ignored=PHONE_IGNORED.pattern, phone_message=field_error(form.phone, _phone_message()),
                   phone_required_message=field_error(form.phone, _problem_message("required")))


@public_bp.get("/apply/<institution_id>/submitted")
def applied(institution_id: str):
    institution = _form_institution(InstitutionScope(institution_id))
    submitted = session.get(_SUBMITTED_KEY)
    if not submitted:
        return redirect(url_for("public.apply", institution_id=institution.id))
    use_language(request.args.get("lang") or submitted.get("language")
                 or visitor_language(institution.default_language))
    submitted_at = parse_utc(submitted["submitted_at"]) if submitted.get("submitted_at") else None
    return _render("public/applied.html", applicant_identity(institution), submitted=submitted,
                   submitted_at=submitted_at)


def _open_answer_link(token: str) -> tuple[Decision, ApplicantIdentity]:
    """The decision of an answer link and its institution's identity, in the applicant's language (unless
    they pick another with ?lang=). NotFound for a forged or expired link (`_link_refused` answers it)."""
    decision = decision_for_token(token)
    institution = active_institution(InstitutionScope(decision.institution_id))
    use_language(request.args.get("lang") or decision.application.applicant.language
                 or institution.default_language)
    return decision, applicant_identity(institution)


def _link_refused(error: NotFound):
    """The 404 of a link that cannot be used, in the applicant layout (without an institution: none is known)."""
    use_language(visitor_language(None))
    refresh()  # the refusal's heading and sentence both in the visitor's language
    return _private(_render("public/link_refused.html", None, 404, message=str(error.message)))


def _answerable(decision: Decision) -> bool:
    return decision.sent_at is not None and decision.status in ANSWERABLE_DECISIONS


def _decision_page(decision: Decision, identity: ApplicantIdentity, form: DecisionResponseForm,
                   status: int = 200, notice: str | None = None):
    """The first step (the decision and its two choices) or, once answered, the recorded answer."""
    return _private(_render("public/decision.html", identity, status, decision=decision,
                            application=decision.application, form=form, answerable=_answerable(decision),
                            notice=notice))


def answer_page_preview(application, decision_status: str, language: str):
    """For staff: the answer page's first step as `application`'s applicant will see it once `decision_status`
    is sent, in `language`, its choices inert."""
    institution = active_institution(InstitutionScope(application.institution_id))
    # The note to staff in the staff member's language, drawn before the page turns to the applicant's.
    preview = PreviewNote(language=str(get_locale() or DEFAULT_LANGUAGE), text=gettext(
        "Preview for staff: this is the page the applicant will see once the decision is sent. Nothing can be "
        "answered from it."))
    use_language(language)
    refresh()
    decision = PreviewDecision(status=decision_status, sent_at=utcnow(), application=application)
    return _private(_render("public/decision.html", applicant_identity(institution), decision=decision,
                            application=application, form=DecisionResponseForm(formdata=None),
                            answerable=_answerable(decision), preview=preview, public_languages=LANGUAGES,
                            language_url=_language_url))


@dataclass(frozen=True)
class PreviewNote:
    """The staff preview's note: its text and the language it is written in (the staff member's)."""
    language: str
    text: str


@dataclass(frozen=True)
class PreviewDecision:
    """A decision as it will be once sent and not yet answered (never stored)."""
    status: str
    sent_at: datetime
    application: object
    response: None = None
    responded_at: None = None


@public_bp.route("/decisions/respond/<token>", methods=["GET", "POST"])
@limiter.limit(_public_form_limit, methods=["POST"])
def respond_to_decision(token: str):
    """GET: the decision and the two choices (each a link to the confirmation step). POST: the confirmation
    itself, the only request that records an answer (the same answer again records nothing new)."""
    try:
        decision, identity = _open_answer_link(token)
    except NotFound as error:
        return _link_refused(error)
    form = DecisionResponseForm()
    if not form.is_submitted():
        return _decision_page(decision, identity, form)
    if not _answerable(decision):
        form.form_errors.append(gettext("This decision cannot be answered here."))
        return _decision_page(decision, identity, form, 409)
    if not form.validate():
        form.form_errors.append(gettext("This page expired. Please open your link again and choose once more.")
                                if form.csrf_token.errors else gettext("Choose one of the two answers."))
        return _decision_page(decision, identity, form, 400)
    answer = form.response.data
    _audit(f"decision.respond.{answer}", decision.institution_id, decision.id)
    try:
        record_decision_response(decision.id, answer)
    except Conflict:
        if decision.response is not None:  # answered before (another tab, another answer): show that answer
            notice = gettext("Your answer had already been recorded and cannot be changed from this link.")
            return _decision_page(decision, identity, form, 409, notice=notice)
        form.form_errors.append(gettext(
            "This decision has been replaced by a newer one. Please use the link in the latest message from "
            "%(institution)s.", institution=identity.name))
        return _decision_page(decision, identity, form, 409)
    return _private(redirect(url_for("public.respond_to_decision", token=token, lang=request.args.get("lang"))))


@public_bp.get("/decisions/respond/<token>/confirm")
def confirm_decision_response(token: str):
    """The second step: the chosen answer in words, what happens next, a way back and the Confirm button.
    Showing it records nothing."""
    try:
        decision, identity = _open_answer_link(token)
    except NotFound as error:
        return _link_refused(error)
    if decision.response is not None:
        return _private(redirect(url_for("public.respond_to_decision", token=token,
                                         lang=request.args.get("lang"))))
    form = DecisionResponseForm(data={"response": request.args.get("response")})
    if not _answerable(decision):
        form.form_errors.append(gettext("This decision cannot be answered here."))
        return _decision_page(decision, identity, form, 409)
    if form.response.data not in RESPONSES:
        form.form_errors.append(gettext("Choose one of the two answers."))
        return _decision_page(decision, identity, form, 400)
    return _private(_render("public/confirm.html", identity, decision=decision, application=decision.application,
                            form=form, response=form.response.data))
