"""Routes of the applications area: the list, by-id lookup and search (all read-only)."""
from __future__ import annotations

from flask import Response, g, jsonify, request

from api import bp
from api.pages import csv_response, page_response
from core.applications.csv_export import CONTENT_TYPE as CSV_CONTENT_TYPE
from core.applications.csv_export import export_applications_csv
from core.applications.listing.pages import fetch_application_page, fetch_applications_by_id
from core.applications.listing.query import parse_application_query, parse_export_query, parse_format, parse_ids
from core.models import utcnow
from core.applications.ndjson_export import CONTENT_TYPE as NDJSON_CONTENT_TYPE
from core.applications.ndjson_export import export_applications_ndjson
from core.applications.records import RECORD_COLUMNS, application_page_record, application_record, record_values

EXPORTS = {"csv": (export_applications_csv, CSV_CONTENT_TYPE),
           "ndjson": (export_applications_ndjson, NDJSON_CONTENT_TYPE)}


def _application_page(**query_options):
    output = parse_format(request.args)
    query = parse_application_query(request.args, **query_options)
    page = fetch_application_page(g.scope, query)
    return page_response(page, output, application_page_record, record_values, RECORD_COLUMNS)


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


@bp.get("/applications/export")
def export_applications():
    """Every matching application in one streamed response in list order, `X-Total-Rows` counted first.

    A bad filter is a 400 before the status line is sent, never a broken stream.
    """
    output, filters = parse_export_query(request.args)
    export, content_type = EXPORTS[output]
    stream = export(g.scope, filters)
    filename = f"applications-{utcnow():%Y%m%d-%H%M%S}.{output}"
    return Response(stream, content_type=content_type, headers={
        "Content-Disposition": f'attachment; filename="{filename}"', "X-Total-Rows": str(stream.total_rows)})
