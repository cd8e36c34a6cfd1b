"""HTML error pages for everything outside `/api/v1`."""
from __future__ import annotations

from flask import current_app, g, render_template
from werkzeug.exceptions import HTTPException, InternalServerError

from core.errors import KaribuError


def html_error(exc: Exception):
    if isinstance(exc, KaribuError):
        status, message = exc.status, exc.message
    elif isinstance(exc, HTTPException):
        status, message = exc.code or 500, exc.description
    else:
        current_app.logger.exception("Unhandled error in request %s", g.get("request_id", "-"))
        status, message = 500, InternalServerError.description
    if status >= 500:
        message = "Something went wrong on our side. Please try again; if it keeps happening, quote the request id."
    return render_template("errors/error.html", status=status, message=message,
                           request_id=g.get("request_id", "")), status
