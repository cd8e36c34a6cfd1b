"""Routes of the applications area: the list, by-id lookup and search (all read-only)."""
from __future__ import annotations

from flask import g, jsonify, request

from api import bp
from api.pages import csv_response, page_response
from core.listing import (
    fetch_application_page, fetch_applications_by_id, parse_application_query, parse_format, parse_ids,
)
from core.records import RECORD_COLUMNS, application_record, record_values


def _application_page(**query_options):
    output = parse_format(request.args)
    query = parse_application_query(request.args, **query_options)
    page = fetch_application_page(g.scope, query)
    return page_response(page, output, application_record, record_values, RECORD_COLUMNS)


@bp.get("/applications")
def list_applications():
    return _application_page()


@bp.get("/applications/search")
def search_applications():
    return _application_page(kind="search", require_q=True)


@bp.get("/applications/by-id")
def applications_by_id():
    output = parse_format(request.args)
    ids = parse_ids(request.args.getlist("ids"))
    rows, missing = fetch_applications_by_id(g.scope, ids)
    if output == "csv":
        response = csv_response([record_values(row) for row in rows], RECORD_COLUMNS)
        response.headers["X-Missing"] = ",".join(missing)
        return response
    return jsonify({"code": 200, "data": [application_record(row) for row in rows], "missing": missing})
