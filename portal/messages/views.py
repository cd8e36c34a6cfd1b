"""Messages to applicants: the admin Messages page (filter by status and channel, view each message as sent,
the institution's default language) and resending a failed message (also from the applicant file)."""
from __future__ import annotations

from urllib.parse import urlsplit

from flask import flash, g, make_response, redirect, request, url_for
from flask_babel import gettext as _
from markupsafe import escape

from core.config import settings
from core.errors import InvalidInput
from core.i18n import LANGUAGES
from core.institutions.sandbox import live_scope
from core.messages.log import (
    default_language_of, get_message, list_messages, resend_message, set_default_language, without_private_links,
)
from core.models.messages import CHANNELS, MESSAGE_STATUSES, SENDABLE_MESSAGE_STATUSES
from portal import bp
from portal.applicants.timeline import render_timeline
from portal.forms import ResendMessageForm
from portal.messages.forms import DefaultLanguageForm
from portal.rendering import is_partial_request, render_page
from portal.security import admin_required, audit, staff_required

PAGE_SIZE = 50
FILTER_LABELS = {"status": lambda: _("Status"), "channel": lambda: _("Channel")}
# The HTML part is shown on its own, sandboxed: no script, no form, nothing loaded from elsewhere.
EMAIL_PREVIEW_POLICY = ("sandbox allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation; "
                        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'")


def email_preview_policy() -> str:
    """EMAIL_PREVIEW_POLICY letting images come from this site and from PUBLIC_BASE_URL's origin, where the
    email's logo (`/brand/…`) is served."""
    public = urlsplit(settings().PUBLIC_BASE_URL)
    sources = f"img-src data: 'self' {public.scheme}://{public.netloc}" if public.netloc else "img-src data: 'self'"
    return EMAIL_PREVIEW_POLICY.replace("img-src data:", sources)


def message_status_labels() -> dict[str, str]:
    """Each message status in words of the page's language."""
    return {"queued": _("queued"), "sent": _("sent"), "retry_scheduled": _("retry scheduled"), "failed": _("failed"),
            "test": _("Test")}


@bp.app_context_processor
def _message_helpers():
    return {"message_status_labels": message_status_labels}


def _filter(name: str, allowed: tuple[str, ...]) -> str | None:
    value = (request.args.get(name) or "").strip()
    if value and value not in allowed:
        raise InvalidInput(_("%(filter)s must be one of: %(values)s", filter=FILTER_LABELS[name](),
                             values=", ".join(allowed)), field=name)
    return value or None


def _list_context() -> dict:
    status, channel = _filter("status", MESSAGE_STATUSES), _filter("channel", CHANNELS)
    before = (request.args.get("before") or "").strip() or None
    page = list_messages(g.scope, status=status, channel=channel, limit=PAGE_SIZE, before=before)
    in_flight = any(message.status in SENDABLE_MESSAGE_STATUSES for message in page.rows)
    return dict(page=page, status_filter=status, channel_filter=channel, statuses=MESSAGE_STATUSES,
                channels=CHANNELS, refresh=in_flight and before is None)


@bp.get("/messages")
@admin_required
def messages():
    context = _list_context()
    if is_partial_request() and request.args.get("before"):
        return render_page("messages/partial/rows.html", **context)
    form = DefaultLanguageForm(language=default_language_of(g.scope))
    return render_page("messages/index.html", "messages/partial/list.html", language_form=form,
                       languages=LANGUAGES, dev_inbox=settings().MAIL_DEV_INBOX_URL, **context)


@bp.post("/messages/default-language")
@admin_required
def messages_default_language():
    form = DefaultLanguageForm()
    if not form.validate_on_submit():
        raise InvalidInput(_("Choose English, French or Swahili."), field="language")
    set_default_language(live_scope(g.scope), form.language.data)  # a setting of the live institution
    audit("institution.default_language", form.language.data)
    flash(_("Applicants who do not choose a language now get %(language)s.", language=LANGUAGES[form.language.data]),
          "ok")
    return redirect(url_for("portal.messages"))


@bp.get("/messages/<message_id>")
@admin_required
def message_detail(message_id: str):
    message = get_message(g.scope, message_id)
    return render_page("messages/detail.html", message=message,
                       body_text=without_private_links(message.body_text, _("(personal link, hidden)")),
                       resend_form=ResendMessageForm(), languages=LANGUAGES,
                       platform_sender=settings().MAIL_DEFAULT_SENDER, dev_inbox=settings().MAIL_DEV_INBOX_URL)


@bp.get("/messages/<message_id>/html")
@admin_required
def message_html(message_id: str):
    """The HTML part as sent (a staff account link's token hidden), on a page of its own under a sandboxing
    policy."""
    message = get_message(g.scope, message_id)
    response = make_response(without_private_links(message.body_html, str(escape(_("(personal link, hidden)")))))
    response.mimetype = "text/html"
    response.headers["Content-Security-Policy"] = email_preview_policy()
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.post("/messages/<message_id>/resend")
@staff_required
def message_resend(message_id: str):
    """Queue a failed message again; answers the applicant file's timeline, or the Messages page."""
    form = ResendMessageForm()
    if not form.validate_on_submit():
        raise InvalidInput(_("The form expired; reload the page and try again."), field="csrf_token")
    message = resend_message(g.scope, message_id)
    audit("message.resend", message.id, status=202)
    text = (_("The email to %(recipient)s is queued again.", recipient=message.recipient) if message.channel == "email"
            else _("The SMS to %(recipient)s is queued again.", recipient=message.recipient))
    if form.source.data == "file" and message.application_id:
        if is_partial_request():
            return render_timeline(message.application_id, notice=text)
        flash(text, "ok")
        return redirect(url_for("portal.applicant_detail", application_id=message.application_id) + "#timeline")
    flash(text, "ok")
    return redirect(request.referrer if request.referrer and request.referrer.startswith(request.host_url)
                    else url_for("portal.messages"))
