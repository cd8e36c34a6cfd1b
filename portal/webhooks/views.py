"""Webhooks (admins): the endpoint form, the one-time secret, rotate, disable, remove, test sends, the delivery
log with attempt detail, redeliver, recover since a time and re-enable."""
from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timezone

from flask import flash, g, redirect, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext, ngettext
from flask_login import current_user

from core.config import settings
from core.errors import Conflict, InvalidInput, KaribuError, NotFound
from core.models.webhooks import DELIVERY_STATUSES, SENDABLE_STATUSES
from core.timefmt import isoformat_z
from core.webhooks.endpoints import (
    SUBSCRIBABLE_EVENT_TYPES,
    TEST_EVENT_TYPE,
    disable_endpoint,
    enable_endpoint,
    get_endpoint,
    remove_endpoint,
    rotate_secret,
    save_endpoint,
)
from core.webhooks.examples import send_example_event
from core.webhooks.log import (
    MAX_LOG_LIMIT,
    get_delivery_detail,
    list_deliveries,
    recover_since,
    redeliver,
    send_test_ping,
)
from core.webhooks.schedule import DISABLE_AFTER_CONSECUTIVE_FAILURES
from core.webhooks.urls import answering_dev_receiver, masked_url
from portal import bp
from portal.forms import ActionForm, submitted
from portal.rendering import datetime_text, display_zone, is_partial_request, render_page
from portal.security import admin_required, audit
from portal.webhooks.forms import RecoverForm, TestEventForm, WebhookForm
from portal.webhooks.failures import error_class_label, explain_failure

LOG_PAGE_SIZE = 25
EVENT_DESCRIPTIONS = {
    "application.submitted": lazy_gettext("An applicant, or staff for them, submits an application"),
    "application.updated": lazy_gettext(
        "Stage and admission changes (reserved: not sent yet, starts in a later release)"),
    "decision.sent": lazy_gettext("A decision is sent to the applicant"),
    "decision.responded": lazy_gettext("The applicant accepts or declines a decision"),
    "payment.completed": lazy_gettext("A payment completes"),
}
STATUS_LABELS = {
    "pending": lazy_gettext("pending"),
    "retry_scheduled": lazy_gettext("retry scheduled"),
    "delivered": lazy_gettext("delivered"),
    "dead": lazy_gettext("dead"),
    "endpoint_disabled": lazy_gettext("endpoint disabled"),
}


def _status_filter() -> str | None:
    status = (request.args.get("status") or "").strip()
    if status and status not in DELIVERY_STATUSES:
        raise InvalidInput(_("Status must be one of: %(statuses)s", statuses=", ".join(DELIVERY_STATUSES)),
                           parameter="status")
    return status or None


def _shown_rows() -> int:
    """How many rows the refresh re-reads: as many as the page shows (older pages loaded included)."""
    try:
        shown = int(request.args.get("rows", LOG_PAGE_SIZE))
    except ValueError:
        shown = LOG_PAGE_SIZE
    return min(max(shown, LOG_PAGE_SIZE), MAX_LOG_LIMIT)


def _log_summary(deliveries) -> str:
    """One line for screen readers, announced when it changes (never the whole table)."""
    if not deliveries:
        return _("No deliveries yet.")
    counts = Counter(delivery.status for delivery in deliveries)
    parts = ", ".join(f"{count} {STATUS_LABELS[status]}" for status, count in counts.items())
    return ngettext("%(num)d delivery shown: %(parts)s.", "%(num)d deliveries shown: %(parts)s.",
                    len(deliveries), parts=parts)


def _log_context(limit: int = LOG_PAGE_SIZE) -> dict:
    status = _status_filter()
    before = (request.args.get("before") or "").strip() or None
    page = list_deliveries(g.scope, status, limit=limit, before=before)
    pending = any(delivery.status in SENDABLE_STATUSES for delivery in page.rows)
    endpoint = g.get("webhook_endpoint") or get_endpoint(g.scope)
    return dict(page=page, status_filter=status, statuses=DELIVERY_STATUSES, status_labels=STATUS_LABELS,
                refresh=pending and before is None, summary=_log_summary(page.rows),
                test_event_types=_test_event_types(endpoint), error_class_label=error_class_label)


def _test_event_types(endpoint) -> list[str]:
    if endpoint is None:
        return [TEST_EVENT_TYPE]
    return [TEST_EVENT_TYPE] + [event for event in SUBSCRIBABLE_EVENT_TYPES if event in endpoint.event_types]


def _form_values(endpoint) -> dict:
    return {"url": endpoint.url if endpoint else "",
            "events": list(endpoint.event_types) if endpoint else list(SUBSCRIBABLE_EVENT_TYPES),
            "include_name": bool(endpoint and endpoint.include_applicant_name)}


def _settings_page(*, secret: str | None = None, errors: dict | None = None, form: dict | None = None,
                   status: int = 200, message: str | None = None, message_kind: str = "ok",
                   swap_deliveries: bool = False, swap_log_table: bool = False):
    """The whole page, or for htmx the settings region (plus, out of band, what else the action changed)."""
    endpoint = g.webhook_endpoint = get_endpoint(g.scope)
    partial = is_partial_request()
    return render_page(
        "webhooks/index.html", "webhooks/partial/settings.html", endpoint=endpoint,
        form=form if form is not None else _form_values(endpoint), secret=secret, errors=errors or {},
        message=message, message_kind=message_kind, events=SUBSCRIBABLE_EVENT_TYPES,
        event_descriptions=EVENT_DESCRIPTIONS, status=status, swap_deliveries=swap_deliveries and partial,
        swap_log_table=swap_log_table and partial, swap_example_types=bool(endpoint) and partial,
        disabled_by_failures=_disabled_by_failures(endpoint), dev_receiver=dev_receiver_url(),
        uses_dev_receiver=bool(endpoint and dev_receiver_url()
                               and endpoint.url == dev_receiver_endpoint_url()), **_log_context())


def dev_receiver_url() -> str | None:
    """The development receiver's page (WEBHOOK_DEV_RECEIVER_URL, the demo only) while it answers there, else
    None."""
    url = settings().WEBHOOK_DEV_RECEIVER_URL.strip().rstrip("/")
    return url if answering_dev_receiver(url) else None


def dev_receiver_endpoint_url() -> str | None:
    """Where the development receiver takes this institution's deliveries, else None."""
    base = dev_receiver_url()
    return f"{base}/hooks/{current_user.institution_id}" if base else None


def _disabled_by_failures(endpoint) -> bool:
    return bool(endpoint and not endpoint.enabled
                and endpoint.consecutive_failures >= DISABLE_AFTER_CONSECUTIVE_FAILURES)


def _field_errors(error: KaribuError) -> dict[str, str]:
    """The error in words of the form (its labels, never field names)."""
    field = error.name or "url"
    if field == "events":
        if not request.form.getlist("events"):
            return {"events": _("Choose at least one event type.")}
        return {"events": _("Event types: choose only from the list.")}
    reason = error.errors[0].get("reason") if error.errors else None
    if reason:
        return {"url": _("This endpoint URL is not allowed: %(reason)s.", reason=reason)}
    return {"url": _("Enter the endpoint URL, starting with https://.")}


@bp.get("/webhooks")
@admin_required
def webhooks():
    return _settings_page()


@bp.post("/webhooks")
@admin_required
def webhooks_save():
    posted = submitted(WebhookForm())
    form = {"url": posted.url.data or "", "events": posted.events.data, "include_name": posted.include_name.data}
    existed = get_endpoint(g.scope) is not None
    try:
        endpoint, secret = save_endpoint(g.scope, form["url"], events=form["events"],
                                         include_name=form["include_name"])
    except KaribuError as error:
        audit("webhook.save", masked_url(form["url"])[:200], status=error.status)
        return _settings_page(errors=_field_errors(error), form=form, status=422)
    audit("webhook.save", endpoint.id)
    return _settings_page(secret=secret, message=_("Webhook settings saved."), swap_deliveries=not existed)


@bp.post("/webhooks/dev-receiver")
@admin_required
def webhooks_use_dev_receiver():
    """The demo's one click: the development receiver becomes the endpoint (event types and the name option
    kept when an endpoint exists). Not found outside the demo."""
    submitted(ActionForm())
    url = dev_receiver_endpoint_url()
    if url is None:
        raise NotFound(_("There is no development receiver: it runs only in the demo (scripts/run.sh)."))
    existed = get_endpoint(g.scope) is not None
    endpoint, secret = save_endpoint(g.scope, url)
    audit("webhook.save", endpoint.id)
    return _settings_page(secret=secret, swap_deliveries=not existed, message=_(
        "Deliveries now go to the development receiver. Send a test ping, then open the receiver's page."))


@bp.post("/webhooks/rotate")
@admin_required
def webhooks_rotate():
    submitted(ActionForm())
    secret = rotate_secret(g.scope)
    audit("webhook.rotate_secret", current_user.institution_id)
    return _settings_page(secret=secret,
                          message=_("A new signing secret is in force; the old one no longer works."))


@bp.post("/webhooks/enable")
@admin_required
def webhooks_enable():
    submitted(ActionForm())
    endpoint = enable_endpoint(g.scope)
    audit("webhook.enable", endpoint.id)
    return _settings_page(message=_("The endpoint is enabled again; its failure count starts from zero."),
                          swap_log_table=True)


@bp.post("/webhooks/disable")
@admin_required
def webhooks_disable():
    submitted(ActionForm())
    try:
        endpoint = disable_endpoint(g.scope)
    except Conflict:
        return _settings_page(message=_("The endpoint is already disabled."), message_kind="warn", status=409)
    audit("webhook.disable", endpoint.id)
    return _settings_page(message=_("The endpoint is disabled: nothing is sent until you re-enable it."),
                          swap_log_table=True)


@bp.post("/webhooks/remove")
@admin_required
def webhooks_remove():
    submitted(ActionForm())
    try:
        endpoint_id = remove_endpoint(g.scope)
    except Conflict:
        audit("webhook.remove", current_user.institution_id, status=409)
        return _settings_page(message=_("A delivery is being sent right now. Try again in a minute."),
                              message_kind="warn", status=409)
    audit("webhook.remove", endpoint_id)
    return _settings_page(message=_("The endpoint and its delivery log were removed. Nothing more is sent; "
                                    "events stay in the events feed."), swap_deliveries=True)


@bp.post("/webhooks/ping")
@admin_required
def webhooks_ping():
    submitted(ActionForm())
    try:
        delivery = send_test_ping(g.scope)
    except (InvalidInput, Conflict) as refused:
        return _log_refusal(refused, "webhook.ping")
    audit("webhook.ping", delivery.id, status=202)
    return _log_response(_("Test ping queued (%(id)s).", id=delivery.id))


@bp.post("/webhooks/test-event")
@admin_required
def webhooks_test_event():
    event_type = submitted(TestEventForm()).event_type.data or ""
    try:
        delivery = send_example_event(g.scope, event_type)
    except (InvalidInput, Conflict) as refused:
        return _log_refusal(refused, "webhook.test_event")
    audit("webhook.test_event", f"{event_type} {delivery.id}", status=202)
    return _log_response(_("Example %(type)s event queued (%(id)s), marked as a test.", type=event_type,
                           id=delivery.id))


def local_moment(text: str) -> datetime:
    """A time typed in the portal's zone (a datetime-local value or a bare date), or with its own offset, as naive
    UTC; a repeated time is its first occurrence. InvalidInput when malformed or skipped by the clocks."""
    zone = display_zone()
    example = _("Recover failed deliveries since: enter a date and time, e.g. 2026-11-20T08:00.")
    text = (text or "").strip()
    try:
        typed = (datetime.combine(date.fromisoformat(text), datetime.min.time()) if len(text) == 10
                 else datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text))
    except ValueError:
        raise InvalidInput(example, field="since") from None
    if typed.tzinfo is not None:
        return typed.astimezone(timezone.utc).replace(tzinfo=None)
    moment = typed.replace(tzinfo=zone, fold=0).astimezone(timezone.utc)
    if moment.astimezone(zone).replace(tzinfo=None) != typed:
        raise InvalidInput(_("%(time)s does not exist in %(zone)s: the clocks moved forward then. Enter a time "
                             "before or after.", time=typed.strftime("%Y-%m-%d %H:%M"), zone=zone.key),
                           field="since")
    return moment.replace(tzinfo=None)


@bp.post("/webhooks/recover")
@admin_required
def webhooks_recover():
    raw = submitted(RecoverForm()).since.data or ""
    try:
        since = local_moment(raw)
        count = recover_since(g.scope, since)
    except (InvalidInput, Conflict) as refused:
        return _log_refusal(refused, "webhook.recover")
    audit("webhook.recover", isoformat_z(since), status=202)
    when = _("%(time)s (%(zone)s)", time=datetime_text(since), zone=display_zone().key)
    return _log_response(ngettext("Since %(when)s: %(num)d delivery queued again.",
                                  "Since %(when)s: %(num)d deliveries queued again.", count, when=when))


@bp.post("/webhooks/deliveries/<delivery_id>/redeliver")
@admin_required
def webhooks_redeliver(delivery_id: str):
    submitted(ActionForm())
    try:
        delivery = redeliver(g.scope, delivery_id)
    except (InvalidInput, Conflict) as refused:
        return _log_refusal(refused, "webhook.redeliver")
    audit("webhook.redeliver", delivery.id, status=202)
    return _log_response(_("Delivery %(id)s queued again.", id=delivery.id))


def _log_response(message: str, *, kind: str = "ok", status: int = 200):
    """For htmx: the log table, with the message swapped into the log's status line."""
    if is_partial_request():
        return render_page("webhooks/partial/log_table.html", message=message, message_kind=kind,
                           swap_message=True, status=status, **_log_context())
    flash(message, kind)
    return redirect(url_for("portal.webhooks"))


def _log_refusal(refused: KaribuError, action: str):
    """A refused log action (endpoint disabled, bad time, type not subscribed): for htmx the table stays and
    the reason goes to the log's status line; otherwise the error page."""
    if not is_partial_request():
        raise refused
    audit(action, status=refused.status)
    return _log_response(refused.message, kind="bad", status=refused.status)


@bp.get("/webhooks/deliveries")
@admin_required
def webhooks_log():
    context = _log_context()
    if is_partial_request() and request.args.get("before"):
        return render_page("webhooks/partial/log_rows.html", **context)
    return render_page("webhooks/log.html", "webhooks/partial/log_table.html", message=None, **context)


@bp.get("/webhooks/deliveries/table")
@admin_required
def webhooks_log_table():
    """The log table alone: what the 2 s refresh and the status filter swap in (never the forms)."""
    return render_page("webhooks/partial/log_table.html", "webhooks/partial/log_table.html", message=None,
                       **_log_context(limit=_shown_rows()))


@bp.get("/webhooks/deliveries/<delivery_id>")
@admin_required
def webhooks_delivery(delivery_id: str):
    detail = get_delivery_detail(g.scope, delivery_id)
    explained = [(attempt, explain_failure(attempt.error_class, attempt.error, attempt.response_code))
                 for attempt in detail.attempts]
    return render_page("webhooks/delivery.html", delivery=detail.delivery, attempts=explained, body=detail.body,
                       is_test=detail.is_test, status_labels=STATUS_LABELS, error_class_label=error_class_label)
