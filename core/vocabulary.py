"""Stored codes in words (`words(kind, code)`) in the reader's language; an unknown code is shown as it is."""
from __future__ import annotations

from flask_babel import lazy_gettext as _l
from flask_babel import lazy_pgettext

VOCABULARY = {
    "decision": {
        "none": _l("No decision yet"), "accepted": _l("Accepted"), "waitlisted": _l("Waitlisted"),
        "rejected": _l("Rejected"), "deferred": _l("Deferred"),
    },
    "decision_response": {"accepted": _l("Accepted the offer"), "declined": _l("Declined the offer")},
    # The default pipeline's stage keys; an institution's own stages are shown by the name it gave them.
    "stage": {
        # In context: "Submitted" is also a column header ("the date it was submitted"), a different word in French.
        "submitted": lazy_pgettext("stage", "Submitted"), "documents_review": _l("Documents review"), "interview": _l("Interview"),
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
    # The kinds of document the seeder and partners upload; another kind is shown as it was given.
    "document_kind": {"transcript": _l("Academic transcript"), "national_id": _l("National identity document"),
                      "recommendation": _l("Letter of recommendation"), "passport": _l("Passport"),
                      "birth_certificate": _l("Birth certificate")},
    "yes_no": {True: _l("Yes"), False: _l("No")},
    "actor_kind": {"staff": _l("Staff member"), "api": _l("API key"), "applicant": _l("Applicant")},
    "audit_source": {"api": _l("API"), "portal": _l("Portal"), "callback": _l("Payment notice"),
                     "public": _l("Public pages"), "cli": _l("Command line")},
    "audit_outcome": {"success": _l("Succeeded"), "client_error": _l("Refused"), "server_error": _l("Failed")},
    "verification_outcome": {"verified": _l("Verified"), "not_found": _l("Not found"), "mismatch": _l("Mismatch")},
    # What an audit row records, in words: portal actions, API endpoints (by route name) and payment callbacks;
    # "" is an API request that matched no route.
    "audit_action": {
        "login": _l("Signed in"),
        "login.failed": _l("Sign-in refused"),
        "login.throttled": _l("Sign-in blocked after too many attempts"),
        "login.two_factor_due": _l("Asked for the second factor"),
        "login.two_factor_enrolment_due": _l("Asked to set up two-step sign-in"),
        "logout": _l("Signed out"),
        "password.change": _l("Changed the password"),
        "password.change_refused": _l("Password change refused"),
        "password.reset_requested": _l("Asked for a password reset"),
        "password.reset_throttled": _l("Password reset blocked after too many requests"),
        "password.reset": _l("Set a new password from an emailed link"),
        "password.reset_link_refused": _l("Password reset link refused"),
        "invitation.accepted": _l("Accepted an invitation"),
        "invitation.link_refused": _l("Invitation link refused"),
        "invitation.send": _l("Invited a staff member"),
        "invitation.resend": _l("Sent an invitation again"),
        "invitation.revoke": _l("Withdrew an invitation"),
        "session.end": _l("Ended a session"),
        "session.end_all": _l("Signed out everywhere"),
        "two_factor.enrolled": _l("Set up two-step sign-in"),
        "two_factor.disabled": _l("Turned off two-step sign-in"),
        "two_factor.used": _l("Passed two-step sign-in"),
        "two_factor.failed": _l("Wrong two-step sign-in code"),
        "two_factor.throttled": _l("Two-step sign-in blocked after too many attempts"),
        "two_factor.recovery_codes_regenerated": _l("Made new recovery codes"),
        "two_factor.reset": _l("Two-step sign-in reset by an operator"),
        "user.activate": _l("Reactivated a staff account"),
        "user.deactivate": _l("Deactivated a staff account"),
        "user.role": _l("Changed a staff member’s role"),
        "user.language": _l("Changed the portal language"),
        "api_key.create": _l("Created an API key"),
        "api_key.revoke": _l("Revoked an API key"),
        "applicant.view": _l("Opened an applicant’s file"),
        "applicant.change_state": _l("Changed the stage"),
        "applicant.export": _l("Exported a person’s data"),
        "applicant.erase": _l("Erased a person’s data"),
        "applicants.bulk_update": _l("Changed selected applicants"),
        "applicants.bulk_update_matching": _l("Changed all matching applicants"),
        "applicants.export": _l("Exported the applicant list (CSV)"),
        "applicants.export_xlsx": _l("Exported the applicant list (Excel)"),
        "saved_view.save": _l("Saved a view of the list"),
        "saved_view.delete": _l("Deleted a saved view"),
        "document.download": _l("Downloaded a document"),
        "decision.preview": _l("Previewed a decision message"),
        "decision.send": _l("Sent a decision"),
        "decision.respond.accepted": _l("Applicant accepted the offer"),
        "decision.respond.declined": _l("Applicant declined the offer"),
        "application.submit": _l("Applicant submitted an application"),
        "message.resend": _l("Sent a message again"),
        "institution.default_language": _l("Changed the applicants’ default language"),
        "institution.identity": _l("Changed the institution’s details"),
        "institution.logo": _l("Changed the logo"),
        "institution.logo_remove": _l("Removed the logo"),
        "institution.time_zone": _l("Changed the time zone"),
        "institution.admin_two_factor": _l("Changed the two-step sign-in rule for administrators"),
        "verification.live": _l("Verified a record"),
        "verification.try": _l("Tried a verification"),
        "verification.usage_export": _l("Exported verification usage"),
        "webhook.save": _l("Saved the webhook endpoint"),
        "webhook.remove": _l("Removed the webhook endpoint"),
        "webhook.enable": _l("Turned the webhook endpoint on"),
        "webhook.disable": _l("Turned the webhook endpoint off"),
        "webhook.rotate_secret": _l("Made a new webhook signing secret"),
        "webhook.ping": _l("Sent a webhook ping"),
        "webhook.test_event": _l("Sent a webhook test event"),
        "webhook.redeliver": _l("Delivered a webhook event again"),
        "webhook.recover": _l("Redelivered missed webhook events"),
        "request.refused": _l("Request refused before it was read"),
        "api.list_applications": _l("API: listed applications"),
        "api.search_applications": _l("API: searched applications"),
        "api.applications_by_id": _l("API: read applications by id"),
        "api.export_applications": _l("API: exported applications"),
        "api.update_applications": _l("API: updated applications"),
        "api.download_documents": _l("API: downloaded documents"),
        "api.list_cycles": _l("API: listed cycles"),
        "api.list_events": _l("API: read the events feed"),
        "api.show_event": _l("API: read an event"),
        "api.current_institution": _l("API: read the institution"),
        "api.create_verification": _l("API: verified a record"),
        "api.list_verification_issuers": _l("API: listed verification issuers"),
        "api.openapi_json": _l("API: read the API description"),
        "api.reference_page": _l("API: opened the API reference"),
        "callbacks.mpesa_callback": _l("Payment notice from M-Pesa"),
        "callbacks.flutterwave_callback": _l("Payment notice from Flutterwave"),
        "": _l("Request to an unknown address"),
    },
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
