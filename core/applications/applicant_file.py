"""Everything staff see about one application (record, applicant, payments, decisions, documents, checks,
messages) and one timeline of it, read from the rows themselves.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.applications.credential_checks import checks_for
from core.errors import NotFound
from core.db import db
from core.applications.history import Actor
from core.messages.log import messages_of_application
from core.models import Applicant, ApplicantCheck, Application, Decision, Document, Payment
from core.models.history import ApplicationChange
from core.models.messages import Message
from core.applications.records import application_record, application_select
from core.scoping import InstitutionScope

# Entries at the same instant are listed in this order (a decision is made, then sent, then messaged).
TIMELINE_KINDS = ("submitted", "stage", "decision", "enrolled", "decision_sent", "message", "decision_answered",
                  "payment", "document", "check")


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    kind: str  # one of TIMELINE_KINDS
    item: object  # the row the entry tells about (Application, ApplicationChange, Decision, Payment, …)
    actor: Actor | None = None  # who did it, when known
    old_value: str | None = None
    new_value: str | None = None


@dataclass(frozen=True)
class ApplicantFile:
    record: dict
    applicant: Applicant
    payments: list[Payment]
    decisions: list[Decision]
    documents: list[Document]
    checks: list[ApplicantCheck]
    messages: list[Message]
    timeline: list[TimelineEntry]

    @property
    def current_decision(self) -> Decision | None:
        """The decision row of the application's current decision (None when it is `none`)."""
        latest = self.decisions[-1] if self.decisions else None
        if latest is None or latest.status != self.record["application"]["decision"]:
            return None
        return latest


def applicant_file(scope: InstitutionScope, application_id: str) -> ApplicantFile:
    """Raises NotFound for a missing or foreign application (indistinguishably)."""
    row = db.session.execute(
        application_select(scope).where(Application.id == application_id)).one_or_none()
    if row is None:
        raise NotFound("Application not found")
    applicant = scope.require(Applicant, row.applicant_id, what="Application")

    def owned(model, order):
        return list(db.session.scalars(
            scope.select(model).where(model.application_id == application_id).order_by(*order)))

    payments = owned(Payment, (Payment.created_at, Payment.id))
    decisions = owned(Decision, (Decision.created_at, Decision.id))
    documents = owned(Document, (Document.kind, Document.filename))
    checks = checks_for(scope, application_id)
    messages = messages_of_application(scope, application_id)
    changes = owned(ApplicationChange, (ApplicationChange.changed_at, ApplicationChange.id))
    return ApplicantFile(
        record=application_record(row), applicant=applicant, payments=payments, decisions=decisions,
        documents=documents, checks=checks, messages=messages,
        timeline=_timeline(row, changes, decisions, payments, messages, checks, documents))


def _timeline(row, changes: list[ApplicationChange], decisions: list[Decision], payments: list[Payment],
              messages: list[Message], checks: list[ApplicantCheck],
              documents: list[Document]) -> list[TimelineEntry]:
    submitter = Actor.staff("") if row.submitted_by_staff else Actor.applicant()
    entries = [TimelineEntry(row.submitted_at, "submitted", row, submitter)]
    entries += [TimelineEntry(change.changed_at, change.kind, change, Actor(change.actor_kind, change.actor_name),
                              change.old_value, change.new_value) for change in changes]
    recorded = {(change.kind, change.decision_id) for change in changes if change.decision_id}
    in_history = {decision_id for _, decision_id in recorded}
    for decision in decisions:
        # A decision row the history knows was made earlier than it (or made only to be sent): when it
        # was set is not known, so no "decision set" entry is invented for it.
        if decision.id not in in_history:
            entries.append(TimelineEntry(decision.created_at, "decision", decision, new_value=decision.status))
        if decision.sent_at and ("decision_sent", decision.id) not in recorded:
            entries.append(TimelineEntry(decision.sent_at, "decision_sent", decision, new_value=decision.status))
        if decision.responded_at and ("decision_answered", decision.id) not in recorded:
            entries.append(TimelineEntry(decision.responded_at, "decision_answered", decision,
                                         new_value=decision.response))
    entries += [TimelineEntry(payment.completed_at or payment.created_at, "payment", payment) for payment in payments]
    entries += [TimelineEntry(message.created_at, "message", message) for message in messages]
    entries += [TimelineEntry(check.created_at, "check", check, Actor.staff(check.actor)) for check in checks]
    entries += [TimelineEntry(document.created_at, "document", document) for document in documents]
    return sorted(entries, key=lambda entry: (entry.at, TIMELINE_KINDS.index(entry.kind)))


def application_document(scope: InstitutionScope, application_id: str, document_id: str) -> Document:
    """One document of one application of this institution; NotFound otherwise."""
    document = db.session.scalars(
        scope.select(Document).where(Document.id == document_id, Document.application_id == application_id)
    ).one_or_none()
    if document is None:
        raise NotFound("Document not found")
    return document
