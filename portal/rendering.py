"""Full page or partial, chosen by the HX-Request header; template filters and globals of the portal."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from flask import Flask, make_response, render_template, request
from flask_login import current_user

from core.institutions import institution_name
from core.scoping import InstitutionScope


def is_partial_request() -> bool:
    """An htmx request that swaps part of a page (a history restore needs the whole page)."""
    return request.headers.get("HX-Request") == "true" and request.headers.get(
        "HX-History-Restore-Request") != "true"


def render_page(template: str, partial: str | None = None, *, status: int = 200, headers=None, **context):
    """Render `template`, or only `partial` for an htmx request; caches must key on HX-Request."""
    chosen = partial if partial and is_partial_request() else template
    response = make_response(render_template(chosen, **context), status, headers or {})
    response.vary.add("HX-Request")
    return response


@dataclass(frozen=True)
class NavItem:
    endpoint: str
    label: str
    prefixes: tuple[str, ...]  # view names (after "portal.") that belong to this area
    admin_only: bool = False

    def is_current(self, endpoint: str | None) -> bool:
        name = (endpoint or "").removeprefix("portal.")
        return any(name.startswith(prefix) for prefix in self.prefixes)


NAVIGATION = (
    NavItem("portal.dashboard", "Dashboard", ("dashboard",)),
    NavItem("portal.applicants", "Applicants", ("applicant",)),
    NavItem("portal.cycles", "Cycles", ("cycles",)),
    NavItem("portal.verification", "Verification", ("verification",)),
    NavItem("portal.messages", "Messages", ("message",), admin_only=True),
    NavItem("portal.webhooks", "Webhooks", ("webhooks",), admin_only=True),
    NavItem("portal.api_keys", "API keys", ("api_keys",), admin_only=True),
    NavItem("portal.users", "Users", ("users",), admin_only=True),
    NavItem("portal.audit_log", "Audit log", ("audit",)),
)


def portal_nav() -> list[tuple[NavItem, bool]]:
    if not current_user.is_authenticated:
        return []
    return [(item, item.is_current(request.endpoint)) for item in NAVIGATION
            if current_user.is_admin or not item.admin_only]


def format_datetime(value: datetime | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.rstrip("Z"))
    return value.strftime("%d %b %Y, %H:%M UTC")


def format_date(value: date | datetime | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.rstrip("Z"))
    return value.strftime("%d %b %Y")


def format_money(amount: Decimal | float | None, currency: str | None = "") -> str:
    if amount is None:
        return "—"
    decimals = 0 if currency in ("RWF", "UGX") else 2
    return f"{Decimal(str(amount)):,.{decimals}f} {currency or ''}".strip()


def format_percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def register_template_helpers(app: Flask) -> None:
    app.add_template_filter(format_datetime, "datetime")
    app.add_template_filter(format_date, "date")
    app.add_template_filter(format_money, "money")
    app.add_template_filter(format_percent, "percent")
    app.add_template_global(portal_nav)

    @app.context_processor
    def _institution():
        if current_user.is_authenticated:
            return {"institution_name": institution_name(InstitutionScope(current_user.institution_id))}
        return {}
