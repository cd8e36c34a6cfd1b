"""Why a webhook attempt failed, in words staff can act on (the raw error text stays for engineers)."""
from __future__ import annotations

from http import HTTPStatus

from flask_babel import gettext as _
from flask_babel import lazy_gettext

# Short names of the error classes, shown beside "—" where an attempt got no HTTP answer.
ERROR_CLASS_LABELS = {
    "timeout": lazy_gettext("timed out"),
    "dns": lazy_gettext("DNS"),
    "tls": lazy_gettext("TLS"),
    "connection": lazy_gettext("connection"),
    "redirect": lazy_gettext("redirect"),
    "blocked_address": lazy_gettext("blocked address"),
    "http_status": lazy_gettext("HTTP error"),
    "internal": lazy_gettext("Karibu error"),
}


def error_class_label(error_class: str | None) -> str:
    return str(ERROR_CLASS_LABELS[error_class]) if error_class in ERROR_CLASS_LABELS else (error_class or "")


def _reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _tls(error: str) -> str:
    text = error.lower()
    if "hostname mismatch" in text or "doesn't match" in text or "not valid for" in text:
        return _("The receiver's TLS certificate is not valid for this name: it was issued for another host.")
    if "expired" in text:
        return _("The receiver's TLS certificate has expired.")
    if "self-signed" in text or "self signed" in text or "unable to get local issuer" in text:
        return _("The receiver's TLS certificate is not signed by a trusted authority (self-signed, or the "
                 "intermediate certificates are missing from the server's chain).")
    return _("The secure (TLS) connection to the receiver could not be set up.")


def _connection(error: str) -> str:
    text = error.lower()
    if "refused" in text:
        return _("The receiver refused the connection: nothing accepts connections on that host and port.")
    if "reset" in text or "aborted" in text or "remote end closed" in text:
        return _("The receiver closed the connection before answering.")
    if "unreachable" in text:
        return _("The receiver's network cannot be reached from Karibu.")
    return _("Karibu could not connect to the receiver.")


def _http_status(status: int | None) -> str:
    if status is None:
        return _("The receiver answered with an error.")
    phrase = _reason_phrase(status)
    if status in (401, 403):
        return _("The receiver rejected the request as not authorised (HTTP %(status)s %(phrase)s): check that it "
                 "verifies signatures with the current signing secret.", status=status, phrase=phrase)
    if status in (404, 405, 410):
        return _("The receiver has nothing at this URL (HTTP %(status)s %(phrase)s): check the path.",
                 status=status, phrase=phrase)
    if status == 429:
        return _("The receiver asked Karibu to slow down (HTTP 429 Too Many Requests); the delivery is retried "
                 "later.")
    if status >= 500:
        return _("The receiver failed with a server error (HTTP %(status)s %(phrase)s).", status=status,
                 phrase=phrase)
    return _("The receiver refused the delivery (HTTP %(status)s %(phrase)s).", status=status, phrase=phrase)


def explain_failure(error_class: str | None, error: str | None, status: int | None) -> str | None:
    """One sentence for a failed attempt; None for an acknowledged one."""
    error = error or ""
    if error_class is None:
        return None
    if error_class == "tls":
        return _tls(error)
    if error_class == "timeout":
        return _("The receiver did not answer within 10 seconds (a delivery must be acknowledged with a 2xx "
                 "status within 10 seconds).")
    if error_class == "connection":
        return _connection(error)
    if error_class == "dns":
        return _("The receiver's host name could not be found in DNS.")
    if error_class == "blocked_address":
        return _("Karibu did not send it: the URL now leads to a private, local or otherwise refused address, "
                 "and webhooks only go to public addresses.")
    if error_class == "redirect":
        return _("The receiver answered with a redirect (HTTP %(status)s); redirects are not followed: save the "
                 "final URL instead.", status=status or "3xx")
    if error_class == "http_status":
        return _http_status(status)
    if error_class == "internal":
        return _("Karibu could not send this delivery because of an error on its own side (%(reason)s). It is tried "
                 "again on the retry schedule and not counted against the endpoint; the other deliveries go on.",
                 reason=error)
    return _("The delivery failed.")
