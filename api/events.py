"""Routes of the events area: the feed of webhook envelopes, for partners that poll instead."""
from __future__ import annotations

from flask import g, jsonify, request

from api import bp
from core.events.feed import fetch_event_page, get_event, parse_event_query
from core.events.emission import envelope
from core.applications.listing.query import text_parameter


@bp.get("/events")
def list_events():
    query = parse_event_query(request.args)
    page = fetch_event_page(g.scope, query, text_parameter(request.args, "cursor"))
    body = {"code": 200, "has_next": page.has_next, "cursor": page.cursor,
            "data": [envelope(event) for event in page.rows]}
    return jsonify(body)


@bp.get("/events/<event_id>")
def show_event(event_id: str):
    return jsonify({"code": 200, "data": envelope(get_event(g.scope, event_id))})
