"""Stored codes in words: what a person reads instead of `waitlisted`, `national_id` or `flutterwave`.

The database and the API keep the codes (the spec names them); every page, staff email and portal export shows
`words(kind, code)` in the reader's language. A code this module does not know is shown as it is, so a value
added elsewhere stays visible rather than blank; the translation guard test lists the kinds it expects here.
"""
from __future__ import annotations

from flask_babel import lazy_gettext as _l

VOCABULARY = {
    "decision": {
        "none": _l("No decision yet"), "accepted": _l("Accepted"), "waitlisted": _l("Waitlisted"),
        "rejected": _l("Rejected"), "deferred": _l("Deferred"),
    },
    "decision_response": {"accepted": _l("Accepted the offer"), "declined": _l("Declined the offer")},
    # The default pipeline's stage keys; an institution's own stages are shown by the name it gave them.
    "stage": {
        "submitted": _l("Submitted"), "documents_review": _l("Documents review"), "interview": _l("Interview"),
        "committee_review": _l("Committee review"), "completed": _l("Completed"),
    },
    "role": {"admin": _l("Administrator"), "staff": _l("Staff")},
    "channel": {"email": _l("Email"), "sms": _l("SMS")},
    "message_status": {
        "queued": _l("Waiting to be sent"), "sent": _l("Sent"), "retry_scheduled": _l("Will be retried"),
        "failed": _l("Failed"),
    },
    "delivery_status": {
        "pending": _l("Waiting to be sent"), "retry_scheduled": _l("Will be retried"), "delivered": _l("Delivered"),
        "dead": _l("Gave up"), "endpoint_disabled": _l("Endpoint disabled"),
    },
    "bulk_status": {"queued": _l("Waiting"), "running": _l("In progress"), "done": _l("Done"), "failed": _l("Failed")},
    "payment_processor": {"mpesa": _l("M-Pesa"), "flutterwave": _l("Flutterwave")},
    "payment_status": {"pending": _l("Pending"), "completed": _l("Completed"), "failed": _l("Failed")},
    "gender": {"male": _l("Male"), "female": _l("Female"), "other": _l("Other")},
    "id_type": {"national_id": _l("National ID"), "passport": _l("Passport"), "birth_certificate": _l("Birth certificate")},
    "yes_no": {True: _l("Yes"), False: _l("No")},
    "actor_kind": {"staff": _l("Staff member"), "api": _l("API key"), "applicant": _l("Applicant")},
    "audit_source": {"api": _l("API"), "portal": _l("Portal")},
    "audit_outcome": {"success": _l("Succeeded"), "client_error": _l("Refused"), "server_error": _l("Failed")},
    "verification_outcome": {"verified": _l("Verified"), "not_found": _l("Not found"), "mismatch": _l("Mismatch")},
    "check_result": {
        "authentic": _l("Authentic"), "withheld": _l("Withheld"), "cancelled": _l("Cancelled"),
        "not_found": _l("Not found"),
    },
    "user_status": {True: _l("Active account"), False: _l("Deactivated")},
    # The registries' countries (as the verification API names them).
    "country": {"Rwanda": _l("Rwanda"), "Uganda": _l("Uganda"), "Kenya": _l("Kenya")},
}


def words(kind: str, code) -> str:
    """The code in words of the current language; an unknown code (or kind) as it is, `None` as an empty string."""
    if code is None:
        return ""
    label = VOCABULARY.get(kind, {}).get(code)
    return str(label) if label is not None else str(code)


def choices(kind: str) -> list[tuple[str, str]]:
    """(code, words) pairs of a kind, in the order above: for select boxes and filters."""
    return [(code, str(label)) for code, label in VOCABULARY[kind].items()]
