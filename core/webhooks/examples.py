"""Example events, sent on demand from the webhook settings, of every event type (`"test": true`, placeholder ids)."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import select

from core.errors import InvalidInput
from core.events.emission import (
    emit_application_submitted,
    emit_application_updated,
    emit_decision_responded,
    emit_decision_sent,
    emit_payment_completed,
)
from core.db import db
from core.models import Applicant, Application, Decision, Event, Payment
from core.models.webhooks import WebhookDelivery
from core.scoping import InstitutionScope
from core.webhooks.endpoints import TEST_EVENT_TYPE
from core.webhooks.log import require_enabled_endpoint, send_test_ping
from core.webhooks.runtime import runtime


def _application(scope: InstitutionScope) -> Application:
    """A transient application (never added to the session) with placeholder ids."""
    now = runtime.clock.now()
    return Application(
        id="app_example", institution_id=scope.institution_id, applicant_id="apl_example",
        program_id="prg_example", cycle_id="cyc_example", campus_id=None, stage="submitted",
        submitted_at=now, submitted_by_staff=False,
        applicant=Applicant(id="apl_example", first_name="Aimée", last_name="Uwase"),
    )


def _decision(scope: InstitutionScope, *, responded: bool) -> Decision:
    now = runtime.clock.now()
    application = _application(scope)
    return Decision(id="dec_example", institution_id=scope.institution_id, application_id=application.id,
                    application=application, status="accepted", sent_at=now,
                    response="accepted" if responded else None, responded_at=now if responded else None)


EXAMPLES = {
    "application.submitted": lambda scope: emit_application_submitted(_application(scope)),
    "application.updated": lambda scope: emit_application_updated(_application(scope)),
    "decision.sent": lambda scope: emit_decision_sent(_decision(scope, responded=False)),
    "decision.responded": lambda scope: emit_decision_responded(_decision(scope, responded=True)),
    "payment.completed": lambda scope: emit_payment_completed(Payment(
        id="pay_example", institution_id=scope.institution_id, application_id="app_example",
        amount=Decimal("50000"), currency="RWF", processor="flutterwave")),
}


def send_example_event(scope: InstitutionScope, event_type: str) -> WebhookDelivery:
    """Queue an example `event_type` event, which must be subscribed, to the endpoint; `webhook.test` is the ping."""
    if event_type == TEST_EVENT_TYPE:
        return send_test_ping(scope)
    endpoint = require_enabled_endpoint(scope)
    if event_type not in EXAMPLES or event_type not in endpoint.event_types:
        raise InvalidInput("Choose an event type the endpoint is subscribed to", field="event_type")
    event: Event = EXAMPLES[event_type](scope)
    event.is_test = True
    event.subject_id = None  # placeholder ids belong on no applicant's timeline
    db.session.commit()
    return db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == event.id)).one()
