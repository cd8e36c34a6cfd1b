"""The institution's own audit log, for people: actions and outcomes in words, linked objects, filters, and
each row's technical facts folded under a disclosure."""
from __future__ import annotations

from dataclasses import replace
from datetime import timezone

from flask import g, request, url_for
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from core.accounts.api_keys import list_api_keys
from core.accounts.users import list_users
from core.audit.browsing import (
    ACTIONS, OUTCOMES, SOURCES, AuditFilters, AuditTarget, audit_page, audit_targets, outcome_of, parse_audit_filters,
    target_id,
)
from core.errors import InvalidInput
from core.paging import KeysetPage
from core.vocabulary import words
from portal import bp
from portal.rendering import display_zone, is_partial_request, render_page
from portal.security import staff_required

FILTER_NAMES = ("source", "actor", "action", "outcome", "since", "until")
# What a refused filter tells, by its parameter (the core's messages name parameters, in English).
FILTER_ERRORS = {
    "action": _l("Choose an action from the list."),
    "source": _l("Choose a source from the list."),
    "outcome": _l("Choose an outcome from the list."),
    "since": _l("Enter the From date as YYYY-MM-DD, for example 2026-01-31."),
    "until": _l("Enter the Until date as YYYY-MM-DD, for example 2026-01-31."),
    "before": _l("This link to older entries is not valid: start again from the newest."),
}
RANGE_ERROR = _l("The Until date must not be before the From date.")


def _days_in_zone(filters: AuditFilters, args) -> AuditFilters:
    """A day typed in the From and Until fields is a day of the institution's zone, as every time shown."""
    changes = {}
    for name in ("since", "until"):
        value = getattr(filters, name)
        if value is not None and len((args.get(name) or "").strip()) == 10:
            changes[name] = value.replace(tzinfo=display_zone()).astimezone(timezone.utc).replace(tzinfo=None)
    return replace(filters, **changes)


def _target_url(target: AuditTarget) -> str | None:
    """Where the object opens, if this viewer may open it (users, keys and webhooks are admins' pages)."""
    if target.kind == "application":
        return url_for("portal.applicant_detail", application_id=target.id)
    if not current_user.is_admin:
        return None
    if target.kind == "user":
        return url_for("portal.users") + f"#user-{target.id}"
    if target.kind == "api_key":
        return url_for("portal.api_keys") + f"#key-{target.id}"
    if target.kind == "webhook_endpoint":
        return url_for("portal.webhooks")
    if target.kind == "invitation":
        return url_for("portal.users")
    return url_for("portal.webhooks_delivery", delivery_id=target.id)


def _entries(rows) -> list[dict]:
    """Each row with what the page shows of it: its action and outcome in words, its target as a link."""
    targets = audit_targets(g.scope, rows)
    entries = []
    for row in rows:
        target = targets.get(target_id(row.target) or "")
        url = _target_url(target) if target else None
        entries.append({"row": row, "action": words("audit_action", row.action),
                        "outcome": words("audit_outcome", outcome_of(row.status)),
                        "source": words("audit_source", row.source),
                        "target_url": url, "target_label": target.label if url else None})
    return entries


def _people() -> list[tuple[str, str]]:
    """(value, label) of the people one may filter by: the staff (email) and the API keys (prefix, name)."""
    people = [(user.email, user.email) for user in list_users(g.scope)]
    people += [(key.prefix, f"{key.prefix} · {key.name}") for key in list_api_keys(g.scope)]
    return people


def _filter_error(error: InvalidInput) -> tuple[str, str]:
    """(field, message in the reader's language) of a refused filter."""
    name = error.name if error.name in FILTER_ERRORS else "before"
    if name == "until" and "after" in error.message:
        return name, str(RANGE_ERROR)
    return name, str(FILTER_ERRORS[name])


@bp.get("/audit")
@staff_required
def audit_log():
    shown = {name: request.args[name].strip() for name in FILTER_NAMES if (request.args.get(name) or "").strip()}
    context = dict(shown=shown, sources=SOURCES, outcomes=OUTCOMES, people=_people(),
                   actions=sorted(((code, words("audit_action", code)) for code in ACTIONS), key=lambda pair: pair[1]))
    try:
        filters = _days_in_zone(parse_audit_filters(request.args), request.args)
    except InvalidInput as error:
        field, message = _filter_error(error)
        return render_page("audit/index.html", "audit/partial/results.html", status=400, page=KeysetPage.of([], 1),
                           entries=[], filter_error={"field": field, "message": message}, **context)
    page = audit_page(g.scope, filters)
    context.update(page=page, entries=_entries(page.rows), filter_error=None)
    if is_partial_request() and filters.before is not None:
        return render_page("audit/partial/rows.html", **context)
    headers = {"HX-Push-Url": url_for("portal.audit_log", **shown)} if is_partial_request() else {}
    return render_page("audit/index.html", "audit/partial/results.html", headers=headers, **context)
