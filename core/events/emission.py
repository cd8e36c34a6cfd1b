"""Event emission: one function per event type, adding the payload's Event row to the caller's session (no commit)."""
from __future__ import annotations

import json

from core.db import db
from core.models import Application, Decision, Event, Payment, utcnow
from core.institutions.sandbox import is_test_mode
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z
from core.webhooks.outbox import add_delivery_for


def envelope(event: Event) -> dict:
    """The webhook envelope (docs/contract.md): the body of a delivery and an item of the events feed.

    An example event sent from the webhook settings also carries `"test": true` (real events never do);
    `livemode` is false for an event of the institution's sandbox (test mode).
    """
    body = {
        "event_id": event.id,
        "type": event.type,
        "occurred_at": isoformat_z(event.occurred_at),
        "institution_id": event.institution_id,
        "livemode": event.livemode is not False,
        "data": event.payload,
    }
    if event.is_test:
        body["test"] = True
    return body


def event_body(event: Event) -> bytes:
    """The exact body of a delivery request: the envelope, compact JSON, UTF-8."""
    return json.dumps(envelope(event), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _record(institution_id: str, event_type: str, data: dict, subject_id: str | None = None) -> Event:
    event = Event(institution_id=institution_id, type=event_type, occurred_at=utcnow(), payload=data,
                  subject_id=subject_id, livemode=not is_test_mode(InstitutionScope(institution_id)))
    db.session.add(event)
    add_delivery_for(event)
    return event


def _application_payload(application: Application) -> dict:
    applicant = application.applicant
    return {
        "submission_id": application.id,
        "admission_id": application.applicant_id,
        "institution_id": application.institution_id,
        "program_id": application.program_id,
        "cycle_id": application.cycle_id,
        "campus_id": application.campus_id,
        "stage_id": application.stage,
        "submitted_at": isoformat_z(application.submitted_at),
        "submitted_by_staff": bool(application.submitted_by_staff),
        "applicant": {"first_name": applicant.first_name, "last_name": applicant.last_name},
    }


def emit_application_submitted(application: Application) -> Event:
    return _record(application.institution_id, "application.submitted", _application_payload(application),
                   application.id)


def emit_application_updated(application: Application) -> Event:
    return _record(application.institution_id, "application.updated", _application_payload(application),
                   application.id)


def emit_decision_sent(decision: Decision) -> Event:
    application = decision.application
    return _record(decision.institution_id, "decision.sent", {
        "decision_id": decision.id,
        "submission_id": application.id,
        "admission_id": application.applicant_id,
        "institution_id": decision.institution_id,
        "decision_status": decision.status,
        "sent_at": isoformat_z(decision.sent_at),
    }, application.id)


def emit_decision_responded(decision: Decision) -> Event:
    return _record(decision.institution_id, "decision.responded", {
        "decision_id": decision.id,
        "submission_id": decision.application_id,
        "institution_id": decision.institution_id,
        "response": decision.response,
        "responded_at": isoformat_z(decision.responded_at),
    }, decision.application_id)


def emit_payment_completed(payment: Payment) -> Event:
    return _record(payment.institution_id, "payment.completed", {
        "payment_id": payment.id,
        "submission_id": payment.application_id,
        "institution_id": payment.institution_id,
        "amount": float(payment.amount) if payment.amount is not None else None,
        "currency": payment.currency,
        "processor": payment.processor,
    }, payment.application_id)


def emit_webhook_test(scope: InstitutionScope) -> Event:
    return _record(scope.institution_id, "webhook.test", {
        "message": "This is a test event from Karibu.",
        "institution_id": scope.institution_id,
    })
