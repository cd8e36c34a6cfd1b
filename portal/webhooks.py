"""Webhooks (admins): the endpoint form, the one-time secret, rotate, ping, the delivery log with attempt
detail, redeliver, recover since a time and re-enable."""
from __future__ import annotations

from flask import flash, g, redirect, request, url_for
from flask_login import current_user

from core.errors import InvalidInput, KaribuError
from core.models.webhooks import DELIVERY_STATUSES, SENDABLE_STATUSES
from core.timefmt import parse_utc
from core.webhooks.endpoints import (
    SUBSCRIBABLE_EVENT_TYPES,
    enable_endpoint,
    get_endpoint,
    rotate_secret,
    save_endpoint,
)
from core.webhooks.log import get_delivery_with_attempts, list_deliveries, recover_since, redeliver, send_test_ping
from core.webhooks.urls import masked_url
from portal import bp
from portal.forms import ActionForm, RecoverForm, WebhookForm, submitted
from portal.rendering import is_partial_request, render_page
from portal.security import admin_required, audit

LOG_PAGE_SIZE = 25
EVENT_DESCRIPTIONS = {
    "application.submitted": "An applicant, or staff for them, submits an application",
    "application.updated": "Stage and admission changes (reserved: not sent yet, starts in a later release)",
    "decision.sent": "A decision is sent to the applicant",
    "decision.responded": "The applicant accepts or declines a decision",
    "payment.completed": "A payment completes",
}


def _status_filter() -> str | None:
    status = (request.args.get("status") or "").strip()
    if status and status not in DELIVERY_STATUSES:
        raise InvalidInput(f"status must be one of: {', '.join(DELIVERY_STATUSES)}", parameter="status")
    return status or None


def _log_context() -> dict:
    status = _status_filter()
    before = (request.args.get("before") or "").strip() or None
    page = list_deliveries(g.scope, status, limit=LOG_PAGE_SIZE, before=before)
    pending = any(delivery.status in SENDABLE_STATUSES for delivery in page.deliveries)
    return dict(page=page, status_filter=status, statuses=DELIVERY_STATUSES, refresh=pending and before is None)


def _settings_page(*, secret: str | None = None, errors: dict | None = None, form: dict | None = None,
                   status: int = 200, message: str | None = None):
    endpoint = get_endpoint(g.scope)
    if form is None:
        form = {"url": endpoint.url if endpoint else "",
                "events": list(endpoint.event_types) if endpoint else list(SUBSCRIBABLE_EVENT_TYPES),
                "include_name": bool(endpoint and endpoint.include_applicant_name)}
    return render_page("webhooks/index.html", "webhooks/partial/settings.html", endpoint=endpoint, form=form,
                       secret=secret, errors=errors or {}, message=message, events=SUBSCRIBABLE_EVENT_TYPES,
                       event_descriptions=EVENT_DESCRIPTIONS, status=status, **_log_context())


@bp.get("/webhooks")
@admin_required
def webhooks():
    return _settings_page()


@bp.post("/webhooks")
@admin_required
def webhooks_save():
    posted = submitted(WebhookForm())
    form = {"url": posted.url.data or "", "events": posted.events.data, "include_name": posted.include_name.data}
    try:
        endpoint, secret = save_endpoint(g.scope, form["url"], events=form["events"],
                                         include_name=form["include_name"])
    except KaribuError as error:
        audit("webhook.save", masked_url(form["url"])[:200], status=error.status)
        field = error.name or "url"
        return _settings_page(errors={field: error.message}, form=form, status=422)
    audit("webhook.save", endpoint.id)
    return _settings_page(secret=secret, message="Webhook settings saved.")


@bp.post("/webhooks/rotate")
@admin_required
def webhooks_rotate():
    submitted(ActionForm())
    secret = rotate_secret(g.scope)
    audit("webhook.rotate_secret", current_user.institution_id)
    return _settings_page(secret=secret, message="A new signing secret is in force; the old one no longer works.")


@bp.post("/webhooks/enable")
@admin_required
def webhooks_enable():
    submitted(ActionForm())
    endpoint = enable_endpoint(g.scope)
    audit("webhook.enable", endpoint.id)
    return _settings_page(message="The endpoint is enabled again; its failure count starts from zero.")


@bp.post("/webhooks/ping")
@admin_required
def webhooks_ping():
    submitted(ActionForm())
    delivery = send_test_ping(g.scope)
    audit("webhook.ping", delivery.id, status=202)
    return _log_response(f"Test ping queued ({delivery.id}).")


@bp.post("/webhooks/recover")
@admin_required
def webhooks_recover():
    raw = submitted(RecoverForm()).since.data or ""
    try:
        since = parse_utc(raw)
    except ValueError:
        raise InvalidInput("since must be a date and time, e.g. 2026-11-20T08:00", field="since") from None
    count = recover_since(g.scope, since)
    audit("webhook.recover", raw, status=202)
    return _log_response(f"{count} deliver{'y' if count == 1 else 'ies'} queued again.")


@bp.post("/webhooks/deliveries/<delivery_id>/redeliver")
@admin_required
def webhooks_redeliver(delivery_id: str):
    submitted(ActionForm())
    delivery = redeliver(g.scope, delivery_id)
    audit("webhook.redeliver", delivery.id, status=202)
    return _log_response(f"Delivery {delivery.id} queued again.")


def _log_response(message: str):
    if is_partial_request():
        return render_page("webhooks/partial/log.html", message=message, **_log_context())
    flash(message, "ok")
    return redirect(url_for("portal.webhooks"))


@bp.get("/webhooks/deliveries")
@admin_required
def webhooks_log():
    context = _log_context()
    if is_partial_request() and request.args.get("before"):
        return render_page("webhooks/partial/log_rows.html", **context)
    return render_page("webhooks/log.html", "webhooks/partial/log.html", message=None, **context)


@bp.get("/webhooks/deliveries/<delivery_id>")
@admin_required
def webhooks_delivery(delivery_id: str):
    delivery, attempts = get_delivery_with_attempts(g.scope, delivery_id)
    return render_page("webhooks/delivery.html", delivery=delivery, attempts=attempts)
