"""GET /applications/zip: the documents of one page of applications, streamed as a zip."""
from collections.abc import Iterable, Iterator

from flask import Response, g, request

from api import bp
from core.applications import bulkheads
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
    # A place in the export bulkhead from before the page is read until the zip's stream ends or is closed.
    permit = bulkheads.acquire("export")
    try:
        return _bundle_response(query, permit)
    except BaseException:
        permit.release()
        raise


def _released_after(chunks: Iterable[bytes], permit: bulkheads.Permit) -> Iterator[bytes]:
    try:
        yield from chunks
    finally:
        permit.release()


def _bundle_response(query, permit: bulkheads.Permit) -> Response:
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
    response = Response(_released_after(bundle, permit), mimetype="application/zip", headers=headers)
    response.call_on_close(permit.release)  # a body never started (the client went away first)
    return response
