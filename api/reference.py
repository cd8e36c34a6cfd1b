"""`/api/v1/docs`: the API reference, the OpenAPI document rendered by vendored Swagger UI under the portal's CSP
(plus `connect-src` for PUBLIC_BASE_URL).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from flask import current_app, render_template

from api import bp
from core.config import settings

SWAGGER_UI = "vendor/swagger-ui-5.35.0"
# The portal's policy (portal/security.py), nothing loosened.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'{extra_connect}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)


def _public_origin() -> str:
    parts = urlsplit(settings().PUBLIC_BASE_URL)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else ""


@bp.get("/docs")
def reference_page():
    """The human-readable API reference (public, like the document it renders)."""
    origin = _public_origin()
    response = current_app.make_response(render_template("api/reference.html", swagger_ui=SWAGGER_UI))
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.format(
        extra_connect=f" {origin}" if origin else "")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Cache-Control"] = "no-cache"
    return response


reference_page.public = True
