"""Validate a Flask test-client response against the served OpenAPI document (openapi-core)."""
from __future__ import annotations

from functools import lru_cache

from openapi_core import OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse

from api.openapi import openapi_document


@lru_cache(maxsize=1)
def _openapi() -> OpenAPI:
    return OpenAPI.from_dict(openapi_document())


def assert_conforms(response) -> None:
    """Raise if the request/response pair does not match the document (path, status, body, headers)."""
    body_stream = response.request.environ.get("wsgi.input")
    if hasattr(body_stream, "seek"):
        body_stream.seek(0)  # the app already read the request body; let openapi-core read it again
    request = WerkzeugOpenAPIRequest(response.request)
    _openapi().validate_response(request, WerkzeugOpenAPIResponse(response))
