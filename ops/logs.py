"""Logging: text lines for development, or `LOG_FORMAT=json` (one JSON object per line) for collectors.

Every record carries the request id and, where known, the institution of the caller; one `karibu.request`
line per request adds method, path, status and duration.
"""
from __future__ import annotations

import logging
import sys
import time

from flask import Flask, g, has_request_context, request
from pythonjsonlogger.json import JsonFormatter

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
            REQUEST_LOGGER.info(
                "%s %s %s", request.method, request.path, response.status_code,
                extra={"method": request.method, "path": request.path, "status": response.status_code,
                       "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                       "endpoint": request.endpoint or ""})
        return response
