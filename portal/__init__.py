"""The staff portal (server-rendered, htmx) and the public trial-verification page."""
from __future__ import annotations

from flask import Blueprint

from portal.rendering import register_template_helpers
from portal.security import configure_app

bp = Blueprint("portal", __name__)


@bp.record_once
def _configure(state) -> None:
    configure_app(state.app)
    register_template_helpers(state.app)


# Each area's package imports its view modules, which register themselves on `bp`.
from portal import (  # noqa: F401
    accounts,
    applicants,
    audit,
    dashboard,
    messages,
    settings,
    verification,
    webhooks,
)
