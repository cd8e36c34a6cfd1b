"""Routes of the cycles area: the institution's admission cycles with their programs."""
from __future__ import annotations

from flask import g, request

from api import bp
from api.pages import page_response
from core.applications.listing.pages import fetch_cycle_page
from core.applications.listing.query import parse_cycle_query, parse_format
from core.models import utcnow
from core.applications.records import CYCLE_COLUMNS, cycle_record, cycle_values


@bp.get("/cycles")
def list_cycles():
    output = parse_format(request.args)
    page = fetch_cycle_page(g.scope, parse_cycle_query(request.args))
    now = utcnow()
    return page_response(page, output, lambda cycle: cycle_record(cycle, now),
                         lambda cycle: cycle_values(cycle_record(cycle, now)), CYCLE_COLUMNS)
