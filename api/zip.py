"""GET /applications/zip: the documents of one page of applications, streamed as a zip."""

from flask import Response, g, request

from api import bp
from core.applications.document_bundles import DocumentBundle, page_applications
from core.applications.documents import document_storage
from core.applications.listing.pages import fetch_application_page
from core.applications.listing.query import parse_application_query
from core.models.base import utcnow

DEFAULT_LIMIT = 10
MAX_LIMIT = 100


@bp.get("/applications/zip")
def download_documents():
    query = parse_application_query(request.args, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)
    page = fetch_application_page(g.scope, query)
    applications = page_applications(g.scope, [row.id for row in page.rows])
    generated_at = utcnow()
    pagination = {"has_next": page.has_next}
    headers = {
        "X-Has-Next": "true" if page.has_next else "false",
        "Content-Disposition":
            f'attachment; filename="applications-{generated_at:%Y%m%dT%H%M%SZ}.zip"',
        "Cache-Control": "no-store",
    }
    if page.has_next:
        pagination["cursor"] = page.cursor
        headers["X-Cursor"] = page.cursor
    bundle = DocumentBundle(applications, document_storage(), generated_at=generated_at, page=pagination)
    headers["Content-Length"] = str(bundle.content_length)
    return Response(bundle, mimetype="application/zip", headers=headers)
