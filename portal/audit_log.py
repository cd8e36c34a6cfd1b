"""The institution's own audit log: API requests and portal actions, newest first, filterable."""
from __future__ import annotations

from dataclasses import replace
from datetime import timezone

from flask import g, request, url_for
from flask_babel import lazy_gettext as _l

from core.audit.browsing import OUTCOMES, SOURCES, AuditFilters, audit_page, parse_audit_filters
from core.errors import InvalidInput
from portal import bp
from portal.forms import labelled
from portal.rendering import display_zone, is_partial_request, render_page
from portal.security import staff_required

FILTER_NAMES = ("source", "actor", "outcome", "since", "until")
FILTER_LABELS = {"source": _l("Source"), "outcome": _l("Outcome"), "since": _l("From"), "until": _l("Until")}


def _days_in_zone(filters: AuditFilters, args) -> AuditFilters:
    """A day typed in the From and Until fields is a day of the institution's zone, as every time shown."""
    changes = {}
    for name in ("since", "until"):
        value = getattr(filters, name)
        if value is not None and len((args.get(name) or "").strip()) == 10:
            changes[name] = value.replace(tzinfo=display_zone()).astimezone(timezone.utc).replace(tzinfo=None)
    return replace(filters, **changes)


@bp.get("/audit")
@staff_required
def audit_log():
    try:
        filters = parse_audit_filters(request.args)
    except InvalidInput as error:
        raise labelled(error, FILTER_LABELS) from None
    filters = _days_in_zone(filters, request.args)
    page = audit_page(g.scope, filters)
    shown = {name: request.args[name].strip() for name in FILTER_NAMES if (request.args.get(name) or "").strip()}
    context = dict(page=page, shown=shown, sources=SOURCES, outcomes=OUTCOMES)
    if is_partial_request() and filters.before is not None:
        return render_page("audit/partial/rows.html", **context)
    headers = {"HX-Push-Url": url_for("portal.audit_log", **shown)} if is_partial_request() else {}
    return render_page("audit/index.html", "audit/partial/results.html", headers=headers, **context)
