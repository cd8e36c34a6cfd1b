"""HTML error pages for everything outside `/api/v1` (a small alert fragment for htmx requests)."""
from __future__ import annotations

from flask import current_app, g, make_response, render_template
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, InternalServerError

from core.applications.bulkheads import Overloaded
from core.db import DATABASE_RETRY_AFTER_SECONDS
from core.errors import KaribuError
from portal.i18n import use_language, visitor_language
from portal.rendering import render_page

TITLES = {
    400: _l("That request could not be used"),
    401: _l("Sign-in needed"),
    403: _l("Not allowed"),
    404: _l("Not found"),
    405: _l("Not allowed here"),
    409: _l("Conflict"),
    413: _l("Too large"),
    429: _l("Too many attempts"),
    503: _l("Temporarily unavailable"),
}


# Expensive work that cannot run now (core.applications.bulkheads.Overloaded), by its reason.
OVERLOADED_MESSAGES = {
    "busy": _l("Too many searches or exports are running right now. Please try again in a few seconds."),
    "took_too_long": _l("The search took too long. Narrow it (a longer or rarer text, or more filters) and try again."),
}


def html_error(exc: Exception):
    fields = []
    if isinstance(exc, Overloaded):
        return overloaded_page(exc)
    if isinstance(exc, KaribuError):
        status, message = exc.status, exc.message
        fields = exc.errors
    elif isinstance(exc, HTTPException) and exc.response is not None:
        return exc.response  # a view already built the answer (e.g. the throttled sign-in page)
    elif isinstance(exc, HTTPException):
        status, message = exc.code or 500, exc.description
        if isinstance(exc, CSRFError):
            message = _("Your form expired or came from another site. Reload the page and try again.")
    else:
        current_app.logger.exception("Unhandled error in request %s", g.get("request_id", "-"))
        status, message = 500, InternalServerError.description
    if status >= 500 and status != 503:
        message = _("Something went wrong on our side. Please try again; if it keeps happening, quote the reference.")
    title = TITLES.get(status) or _("Something went wrong")
    # The field list adds only what the message does not already say.
    fields = [item for item in fields if item.get("message") != message]
    return render_page("errors/error.html", "errors/partial.html", status=status, title=title,
                       message=message, fields=fields, request_id=g.get("request_id", ""))


def database_unavailable_page():
    """A plain page (no layout: the layout reads the signed-in user, from the database that is down)."""
    language = use_language(visitor_language(None))  # never the signed-in user's: that needs the database
    response = make_response(render_template(
        "errors/unavailable.html", language=language, title=TITLES[503],
        message=_("Karibu cannot reach its database right now. Please try again in a moment."),
        request_id=g.get("request_id", "")), 503)
    response.headers["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response


def overloaded_page(exc: Overloaded):
    """The plain error page of a refused search or export, with Retry-After; nothing was done."""
    response = render_page("errors/error.html", "errors/partial.html", status=503, title=TITLES[503],
                           message=str(OVERLOADED_MESSAGES[exc.reason]), fields=[],
                           request_id=g.get("request_id", ""))
    response.headers["Retry-After"] = str(exc.retry_after)
    return response
