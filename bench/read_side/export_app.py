"""WSGI entry of the export benchmark: the Karibu app plus `GET /bench/export.csv`.

The route streams `core.applications.csv_export.export_applications_csv` for the caller's institution and the list
filters in the query string, exactly as the portal's "export all" does, behind the API's key check. It
exists only in this benchmark process (gunicorn `export_app:app` with `--pythonpath bench/read_side`).
"""
from __future__ import annotations

from flask import Response, request

from core.accounts.api_authentication import AuthSettings, authenticate
from core.applications.csv_export import CONTENT_TYPE, export_applications_csv
from core.applications.listing.query import parse_application_query
from core.scoping import InstitutionScope
from wsgi import create_app

app = create_app()


@app.get("/bench/export.csv")
def export_csv():
    principal = authenticate(request.headers.get("Authorization"), AuthSettings.from_config(app.config.settings))
    query = parse_application_query(request.args)
    stream = export_applications_csv(InstitutionScope(principal.institution_id), query.filters)
    return Response(stream, content_type=CONTENT_TYPE, headers={"X-Total-Rows": str(stream.total_rows)})
