"""Logging: text lines, or `LOG_FORMAT=json` for collectors, with the request id, the institution and redacted
paths; one `karibu.request` line per request.
"""
from __future__ import annotations

import logging
import re
import sys
import time
from urllib.parse import unquote

from flask import Flask, g, has_request_context, request
from pythonjsonlogger.json import JsonFormatter
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, RequestRedirect

from core.audit.recording import redact_query, redacted_request_path

REQUEST_LOGGER = logging.getLogger("karibu.request")
TEXT_FORMAT = "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"


class RequestContextFilter(logging.Filter):
    """Adds `request_id` and `institution_id` (API principal or signed-in staff user) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = "-"
        record.institution_id = None
        if has_request_context():
            record.request_id = g.get("request_id", "-")
            principal = g.get("principal")
            # Flask-Login keeps the loaded user in g._login_user; reading it here never loads it.
            user = g.get("_login_user")
            owner = principal if principal is not None else user
            record.institution_id = getattr(owner, "institution_id", None)
        return True


# werkzeug's request line, in the terminal colours it may add.
_ACCESS_REQUEST_LINE = re.compile(r"^(?P<before>(?:\x1b\[[0-9;]*m)*)(?P<method>[A-Z]+) (?P<target>/\S*) "
                                  r"(?P<version>HTTP/[0-9.]+)(?P<after>(?:\x1b\[[0-9;]*m)*)$")


class AccessLineRedaction(logging.Filter):
    """The development server's access line (`"GET /path?query HTTP/1.1" 200 -`) with its path and query
    redacted as the audit log redacts them (the route is found in the app's URL map)."""

    def __init__(self, url_map: Map):
        super().__init__()
        self.url_map = url_map

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args and isinstance(args[0], str):
            line = _ACCESS_REQUEST_LINE.match(args[0])
            if line:
                target = self.redacted(line["method"], line["target"])
                record.args = (f"{line['before']}{line['method']} {target} {line['version']}{line['after']}",
                               *args[1:])
        return True

    def redacted(self, method: str, target: str) -> str:
        path, _, query = target.partition("?")
        path = unquote(path, errors="replace")
        try:
            rule, arguments = self.url_map.bind("localhost").match(path, method=method, return_rule=True)
        except (HTTPException, RequestRedirect):
            rule, arguments = None, None
        shown = redacted_request_path(path, rule and rule.rule, arguments)
        return f"{shown}?{redact_query(query)}" if query else shown


def redact_access_lines(app: Flask) -> None:
    """The development server's access lines redacted against `app`'s routes. Called once the app is whole:
    an app that failed to start (a bad setting) must not leave its empty URL map on the process-wide logger."""
    werkzeug_logger = logging.getLogger("werkzeug")
    werkzeug_logger.filters[:] = [f for f in werkzeug_logger.filters if not isinstance(f, AccessLineRedaction)]
    werkzeug_logger.addFilter(AccessLineRedaction(app.url_map))


def json_formatter() -> logging.Formatter:
    return JsonFormatter(
        "{asctime}{levelname}{name}{message}{request_id}{institution_id}", style="{",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        datefmt="%Y-%m-%dT%H:%M:%S%z", json_ensure_ascii=False)


def configure_logging(app: Flask, log_format: str, level: str) -> None:
    """One handler on the root logger (replacing the one an earlier app in this process installed)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.karibu = True
    handler.addFilter(RequestContextFilter())
    handler.setFormatter(json_formatter() if log_format == "json"
                         else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if not getattr(h, "karibu", False)] + [handler]
    root.setLevel(level)
    app.logger.handlers.clear()  # propagate to the root handler
    app.logger.propagate = True
    # On the loggers too, so that every handler (pytest's capture included) sees the request fields.
    for logger in (app.logger, logging.getLogger("karibu")):
        logger.filters[:] = [f for f in logger.filters if not isinstance(f, RequestContextFilter)]
        logger.addFilter(RequestContextFilter())
    if log_format == "json":
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # its access lines would duplicate ours

    @app.before_request
    def _start_request_clock():
        g.request_started = time.perf_counter()

    @app.after_request
    def _log_request(response):
        started = g.get("request_started")
        if started is not None:
            path = redacted_request_path(request.path, request.url_rule and request.url_rule.rule,
                                         request.view_args)
            REQUEST_LOGGER.info(
                "%s %s %s", request.method, path, response.status_code,
                extra={"method": request.method, "path": path, "status": response.status_code,
                       "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                       "endpoint": request.endpoint or ""})
        return response
