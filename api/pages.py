"""List responses shared by the read endpoints: the JSON envelope or a CSV page with pagination headers."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from flask import Response, current_app

from core.applications.csv_export import CONTENT_TYPE, iter_csv
from core.applications.listing.pages import Page


def page_response(page: Page, output: str, record: Callable, values: Callable, columns: Sequence[str]):
    """`{code, has_next, cursor?, data}` of `record(row)`s, or CSV of `values(row)` with `X-Has-Next` / `X-Cursor`."""
    if output == "csv":
        response = csv_response([values(row) for row in page.rows], columns)
    else:
        body = {"code": 200, "has_next": page.has_next, "data": [record(row) for row in page.rows]}
        if page.has_next:
            body["cursor"] = page.cursor
        response = current_app.json.utc_response(body)
    response.headers["X-Has-Next"] = "true" if page.has_next else "false"
    if page.has_next:
        response.headers["X-Cursor"] = page.cursor
    return response


def csv_response(rows: Sequence[Sequence], columns: Sequence[str]) -> Response:
    """A whole CSV document; `X-Total-Rows` (the number of records) lets a client check it got them all."""
    response = Response("".join(iter_csv(rows, columns)), content_type=CONTENT_TYPE)
    response.headers["X-Total-Rows"] = str(len(rows))
    return response
