"""JSON errors for `/api/v1` and the callbacks: one shape for every 4xx, a generic body for every 500, and a 503
with `reason` and Retry-After for work that cannot run now (see docs/api.md, "Errors").
"""
from __future__ import annotations

from flask import current_app, g, jsonify, request
from werkzeug.exceptions import HTTPException

from core.applications.bulkheads import Overloaded
from core.db import DATABASE_RETRY_AFTER_SECONDS
from core.errors import KaribuError, problem

INTERNAL_ERROR = "Internal server error"
DATABASE_UNAVAILABLE = "The database is unavailable: retry after the number of seconds in Retry-After"
HTTP_MESSAGES = {
    400: "Bad request",
    404: "Not found",
    405: "Method not allowed",
    415: "Unsupported media type: send JSON with 'Content-Type: application/json'",
    429: "Rate limit exceeded: slow down and retry after the number of seconds in Retry-After",
}


def json_error(status: int, message: str, /, errors: list[dict] | None = None, **extra):
    body = {"code": status, "error": message}
    if status < 500:
        body["errors"] = list(errors or [])
    response = jsonify({**body, **extra})
    response.status_code = status
    return response


def database_unavailable():
    response = json_error(503, DATABASE_UNAVAILABLE)
    response.headers["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response


def handle_api_exception(exc: Exception):
    if isinstance(exc, Overloaded):  # a bulkhead stayed full, or a search hit its timeout: nothing was done
        response = json_error(exc.status, exc.message, **exc.extra)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, KaribuError):
        return json_error(exc.status, exc.message, exc.errors, **exc.extra)
    if isinstance(exc, HTTPException):
        status = exc.code or 500
        extra, errors = {}, []
        if status == 413:
            limit = request.max_content_length
            message = f"Request body too large: at most {limit} bytes" if limit else "Request body too large"
            extra = {"max_bytes": limit} if limit else {}
            errors = [problem("body", "body", message)]
        elif status == 405:
            message = f"Method {request.method} not allowed on {request.path}"
        elif status == 415:
            message = HTTP_MESSAGES[415]
            errors = [problem("header", "Content-Type", message)]
        else:
            message = HTTP_MESSAGES.get(status) or (exc.description if status < 500 else INTERNAL_ERROR)
        response = json_error(status, message, errors, **extra)
        for name, value in exc.get_response().headers.items():
            if name == "Allow":
                response.headers[name] = value
        return response
    current_app.logger.exception("Unhandled error in request %s", g.get("request_id", "-"))
    return json_error(500, INTERNAL_ERROR)
