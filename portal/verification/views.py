"""Record verification in the portal: the public try page (trial key) and, for staff, live lookups with a
billing confirmation and the usage and spend of the institution."""
from __future__ import annotations

import json
import re
import shlex

from flask import Response, g, request, stream_with_context, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from core.applications.credential_checks import record_check
from core.accounts.api_authentication import Principal
from core.config import settings
from core.errors import KaribuError, problem
from core.models import Application
from core.verification.billing import agreement_price, usage_by_month, usage_csv
from core.verification.registries import REGISTRIES
from core.verification.service import (
    RECORD_NOT_FOUND, REGISTRY_UNAVAILABLE, current_settings, list_issuers, verify,
)
from core.verification.validation import INVALID_REQUEST
from portal import bp
from portal.forms import submitted
from portal.limiter import limiter
from portal.rendering import render_page
from portal.security import audit, staff_required
from portal.verification.forms import VerificationForm, verification_form

TRIAL_ACTOR = "trial"


# What staff read of each registry field: its label and its hint (the API publishes the registries' English
# descriptions, for developers); a field not named here keeps its name in words and the registry's description.
FIELD_LABELS = {
    "national_id": _l("National ID number"), "exam_number": _l("Exam number"), "level": _l("Level"),
    "index_number": _l("Index number"), "year": _l("Year"), "examination": _l("Examination"),
}
FIELD_HINTS = {
    ("NESA", "national_id"): _l("16-digit national identity number (Indangamuntu) of the candidate"),
    ("NESA", "exam_number"): _l("Index number printed on the examination slip"),
    ("NESA", "level"): _l("Examination level: P-Level, O-Level or A-Level"),
    ("UNEB", "index_number"): _l("Candidate index number: centre number, '/', candidate number (U0001/501 or "
                                 "005012/045)"),
    ("UNEB", "year"): _l("Year the examination was sat"),
    ("UNEB", "level"): _l("Examination: PLE (primary), UCE (O-Level), UACE (A-Level)"),
    ("KNEC", "index_number"): _l("11-digit index number: 8-digit school code followed by the 3-digit candidate "
                                 "number"),
    ("KNEC", "year"): _l("Year the examination was sat"),
    ("KNEC", "examination"): _l("KCPE (primary) or KCSE (secondary)"),
}


def _in_words(issuer: dict) -> dict:
    """The registry as staff read it: each field with its `label` and hint in the page's language."""
    fields = [{**field, "label": str(FIELD_LABELS.get(field["name"], field["name"].replace("_", " ").capitalize())),
               "description": str(FIELD_HINTS.get((issuer["code"], field["name"]), field["description"]))}
              for field in issuer["fields"]]
    return {**issuer, "fields": fields}


def _issuers() -> dict[str, dict]:
    return {issuer["code"]: _in_words(issuer) for issuer in list_issuers(include_demo=True)}


def _chosen_issuer(issuers: dict[str, dict], code: str | None) -> dict:
    return issuers.get((code or "").upper()) or next(iter(issuers.values()))


def _prefill(issuer: dict, args) -> dict[str, str]:
    """Values for the form: a demo request picked by index (`demo=N`), else what was sent."""
    demo = args.get("demo", "")
    if demo.isdigit() and int(demo) < len(issuer["demo_requests"]):
        chosen = issuer["demo_requests"][int(demo)]
        return {name: str(value) for name, value in chosen.items() if name != "issuer"}
    return {field["name"]: (args.get(field["name"]) or "").strip() for field in issuer["fields"]}


def _chosen_demo(issuer: dict, args) -> str | None:
    """The demo candidate picked by `demo=N`, as its button reads (level or examination, and number)."""
    demo = args.get("demo", "")
    if not (demo.isdigit() and int(demo) < len(issuer["demo_requests"])):
        return None
    chosen = issuer["demo_requests"][int(demo)]
    return (f"{chosen.get('level') or chosen.get('examination')} "
            f"{chosen.get('exam_number') or chosen.get('index_number')}")


def _posted(issuers: dict[str, dict]) -> tuple[dict, VerificationForm]:
    """The chosen issuer and the posted form with that issuer's fields."""
    issuer = _chosen_issuer(issuers, VerificationForm().issuer.data)
    return issuer, submitted(verification_form(issuer))


def _request_body(issuer: dict, form: VerificationForm) -> dict:
    body = {"issuer": issuer["code"]}
    for field in issuer["fields"]:
        value = form[field["name"]].data
        if value:
            body[field["name"]] = value
    return body


def curl_command(base_url: str, api_key: str, body: dict) -> str:
    return (f"curl -sS -X POST {shlex.quote(base_url.rstrip('/') + '/api/v1/verifications')} \\\n"
            f"  -H {shlex.quote('Authorization: Bearer ' + api_key)} \\\n"
            f"  -H 'Content-Type: application/json' \\\n"
            f"  -d {shlex.quote(json.dumps(body, ensure_ascii=False))}")


# What the API says of an identifier (core.verification.registries, .validation), as the page says it: the API
# keeps its English; the page shown to staff is in their language.
FIELD_MESSAGES = {
    "must be a 4-digit year such as 2021": _l("must be a 4-digit year such as 2021"),
    "must be exactly 16 digits": _l("must be exactly 16 digits"),
    "must be exactly 11 digits": _l("must be exactly 11 digits"),
    "must be 4 to 24 characters: digits, capital letters, '/' or '-'":
        _l("must be 4 to 24 characters: digits, capital letters, '/' or '-'"),
    "must look like U0035/512 (UCE, UACE) or 005012/045 (PLE)":
        _l("must look like U0035/512 (UCE, UACE) or 005012/045 (PLE)"),
    "must not be in the future": _l("must not be in the future"),
    "must be a string": _l("must be a string"),
}
_REQUIRED = re.compile(r"is required for \w+(?:: one of (?P<choices>.+))?")
_ONE_OF = re.compile(r"must be one of (?P<choices>.+)")


def field_message(message: str) -> str:
    """An identifier's problem in the page's language (one the page does not know stays as the API says it)."""
    if message in FIELD_MESSAGES:
        return str(FIELD_MESSAGES[message])
    if match := _REQUIRED.fullmatch(message):
        return (_("is required: one of %(choices)s", choices=match["choices"]) if match["choices"]
                else _("is required"))
    if match := _ONE_OF.fullmatch(message):
        return _("must be one of %(choices)s", choices=match["choices"])
    return message


def _shown(answer: dict, registry_name: str) -> dict:
    """The title and sentence of a refused lookup in the page's language (the API's own words stay in its JSON)."""
    error, message = answer.get("error"), answer.get("message")
    if error == RECORD_NOT_FOUND:
        return {"error": _("Record not found"), "message": _("%(registry)s has no matching record",
                                                             registry=registry_name)}
    if error == REGISTRY_UNAVAILABLE:
        return {"error": _("Registry unavailable"), "message": _(
            "%(registry)s did not answer; nothing was charged. Retry later.", registry=registry_name)}
    if error == INVALID_REQUEST:
        return {"error": _("Some identifiers need correcting"), "message": None}
    return {"error": error, "message": message}


def _outcome(principal: Principal, body: dict) -> dict:
    """Run one verification; the outcome carries the response body and status as the API would send them, and
    what the page says of a refusal (`shown`, `fields`) in the staff member's language."""
    try:
        result = verify(principal, body)
    except KaribuError as error:
        answer = {"code": error.status, "error": error.message, "errors": error.errors, **error.extra}
        registry = REGISTRIES.get(str(body.get("issuer") or "").upper())
        fields = [{**item, "message": field_message(item["message"])} for item in error.errors]
        return {"status": error.status, "answer": answer, "fields": fields,
                "shown": _shown(answer, registry.name if registry else "")}
    return {"status": 200, "answer": result.body, "fields": []}


def _page_status(outcome: dict) -> int:
    """The page itself: 422 when the form needs fixing; otherwise 200, whatever the registry said."""
    return 422 if outcome["status"] == 400 else 200


def _field_errors(outcome: dict) -> dict[str, str]:
    return {problem["name"]: problem["message"] for problem in outcome.get("fields", [])}


# --- the public try page -------------------------------------------------------------------------------


@bp.get("/try")
def try_page():
    issuers = _issuers()
    issuer = _chosen_issuer(issuers, request.args.get("issuer"))
    return render_page("verification/try.html", "verification/partial/try_fields.html", issuers=issuers,
                       issuer=issuer, values=_prefill(issuer, request.args), errors={}, outcome=None,
                       trial_key=settings().TRIAL_API_KEY, form_action=url_for("portal.try_verify"),
                       show_demos=True, demo_chosen=_chosen_demo(issuer, request.args))


@bp.post("/try")
@limiter.limit(lambda: settings().PORTAL_TRY_RATE_LIMIT)
def try_verify():
    issuers = _issuers()
    issuer, form = _posted(issuers)
    body = _request_body(issuer, form)
    trial_key = settings().TRIAL_API_KEY
    outcome = _outcome(Principal(kind="trial", institution_id=None, key_id=None, actor=TRIAL_ACTOR), body)
    outcome["curl"] = curl_command(request.url_root, trial_key, body)
    outcome["json"] = json.dumps(outcome["answer"], indent=2, ensure_ascii=False)
    audit("verification.try", issuer["code"], status=outcome["status"])
    return render_page("verification/try.html", "verification/partial/result.html", issuers=issuers,
                       issuer=issuer, values=_prefill(issuer, form.data), errors=_field_errors(outcome),
                       outcome=outcome, trial_key=trial_key, form_action=url_for("portal.try_verify"),
                       show_demos=True, status=_page_status(outcome))


# --- live lookups and usage (signed-in staff) ----------------------------------------------------------


def _price():
    verification = current_settings()
    return agreement_price(g.scope, verification.default_price, verification.default_currency)


def _staff_principal() -> Principal:
    return Principal(kind="live_key", institution_id=current_user.institution_id, key_id=None,
                     actor=f"portal:{current_user.email}")


def _application_id(values) -> str | None:
    """The application a lookup is made for (from the applicant's page), checked to be this institution's."""
    application_id = (values.get("application") or "").strip()
    if not application_id:
        return None
    g.scope.require(Application, application_id, what="Application")
    return application_id


@bp.get("/verification")
@staff_required
def verification():
    issuers = _issuers()
    issuer = _chosen_issuer(issuers, request.args.get("issuer"))
    return render_page("verification/live.html", "verification/partial/try_fields.html", issuers=issuers,
                       issuer=issuer, values=_prefill(issuer, request.args), errors={}, outcome=None,
                       price=_price(), form_action=url_for("portal.verification_lookup"),
                       application_id=_application_id(request.args))


@bp.post("/verification")
@staff_required
def verification_lookup():
    issuers = _issuers()
    issuer, form = _posted(issuers)
    body = _request_body(issuer, form)
    application_id = _application_id(form.data)
    price = _price()
    if not form.confirm_billing.data:
        answer = {"code": 400, "error": _("Confirm the charge before a live lookup"),
                  "errors": [problem("body", "confirm_billing", _("Tick the box to accept the charge."))]}
        outcome = {"status": 400, "answer": answer, "fields": answer["errors"],
                   "shown": {"error": answer["error"], "message": None}}
    else:
        outcome = _outcome(_staff_principal(), body)
        audit("verification.live", f"{issuer['code']} {application_id or ''}".strip(), status=outcome["status"])
        if application_id and outcome["status"] in (200, 404):
            level_field = REGISTRIES[issuer["code"]].level_field
            record_check(g.scope, application_id, issuer=issuer["code"], level=body.get(level_field, ""),
                         answer=outcome["answer"], actor=current_user.email)
    return render_page("verification/live.html", "verification/partial/result.html", issuers=issuers,
                       issuer=issuer, values=_prefill(issuer, form.data), errors=_field_errors(outcome),
                       outcome=outcome, price=price, form_action=url_for("portal.verification_lookup"),
                       application_id=application_id, status=_page_status(outcome))


@bp.get("/verification/usage")
@staff_required
def verification_usage():
    rows = usage_by_month(g.scope)
    totals: dict[str, dict] = {}
    for row in rows:
        total = totals.setdefault(row["currency"], {"lookups": 0, "amount": 0})
        total["lookups"] += row["lookups"]
        total["amount"] += row["amount"]
    return render_page("verification/usage.html", rows=rows, totals=totals)


@bp.get("/verification/usage.csv")
@staff_required
def verification_usage_csv():
    month = request.args.get("month") or None
    lines = usage_csv(g.scope, month)
    first = next(lines)  # validates `month` before the response starts
    audit("verification.usage_export", month or "all")
    filename = f"verification-usage-{month or 'all'}.csv"

    def stream():
        yield first
        yield from lines

    return Response(stream_with_context(stream()), mimetype="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})
