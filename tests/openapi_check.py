"""Validate responses against the served OpenAPI document (openapi-core), and every error body against the
shared `Error` component (the test client does it for every API and callback response)."""
from __future__ import annotations

from functools import lru_cache

from flask.testing import FlaskClient
from jsonschema import Draft202012Validator
from openapi_core import OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse

from api.openapi import openapi_document

CHECKED_PREFIXES = ("/api/v1/", "/callbacks/")


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


@lru_cache(maxsize=None)
def component_validator(name: str) -> Draft202012Validator:
    """A JSON Schema validator for `#/components/schemas/<name>`, resolving references inside the document."""
    document = openapi_document()
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": document["components"]})


def assert_matches_component(body, name: str) -> None:
    errors = sorted(component_validator(name).iter_errors(body), key=str)
    assert not errors, f"does not match {name}: {errors[0].message} at {list(errors[0].absolute_path)}: {body!r}"


def event_schema_name(event_type: str) -> str:
    """The component the document's `webhooks` section gives the request body of this event type."""
    webhook = openapi_document()["webhooks"][event_type]["post"]
    return webhook["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]


def assert_is_event(envelope: dict) -> None:
    """A webhook body or feed item matches the `webhooks` schema of its type (and the `Event` union)."""
    assert_matches_component(envelope, event_schema_name(envelope["type"]))
    assert_matches_component(envelope, "Event")


def assert_error_shape(response) -> None:
    """A 4xx body is the shared `Error`; a 5xx body the `ServerError`."""
    if response.status_code < 400:
        return
    assert response.mimetype == "application/json", f"{response.status_code} error is not JSON"
    assert_matches_component(response.get_json(), "Error" if response.status_code < 500 else "ServerError")


class ErrorShapeCheckingClient(FlaskClient):
    """The suite's test client: every error of the API and the callbacks is checked against the document."""

    def open(self, *args, **kwargs):
        response = super().open(*args, **kwargs)
        if response.request.path.startswith(CHECKED_PREFIXES) and not response.is_streamed:
            assert_error_shape(response)
        return response
