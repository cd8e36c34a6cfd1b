"""Everything staff see about one application: the record, the applicant, payments, decisions,
documents, the event timeline and the messages sent to the applicant."""
from __future__ import annotations

from dataclasses import dataclass

from core.applicant_checks import checks_for
from core.errors import NotFound
from core.extensions import db
from core.messages.log import messages_of_application
from core.models import Applicant, ApplicantCheck, Application, Decision, Document, Event, Payment
from core.models.messages import Message
from core.partner_records import application_record, application_select
from core.scoping import InstitutionScope


@dataclass(frozen=True)
class ApplicantFile:
    record: dict
    applicant: Applicant
    payments: list[Payment]
    decisions: list[Decision]
    documents: list[Document]
    checks: list[ApplicantCheck]
    events: list[Event]
    messages: list[Message]


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

    events = list(db.session.scalars(
        scope.select(Event).where(Event.subject_id == application_id).order_by(Event.occurred_at, Event.id)))
    return ApplicantFile(
        record=application_record(row),
        applicant=applicant,
        payments=owned(Payment, (Payment.created_at, Payment.id)),
        decisions=owned(Decision, (Decision.created_at, Decision.id)),
        documents=owned(Document, (Document.kind, Document.filename)),
        checks=checks_for(scope, application_id),
        events=events,
        messages=messages_of_application(scope, application_id),
    )


def application_document(scope: InstitutionScope, application_id: str, document_id: str) -> Document:
    """One document of one application of this institution; NotFound otherwise."""
    document = db.session.scalars(
        scope.select(Document).where(Document.id == document_id, Document.application_id == application_id)
    ).one_or_none()
    if document is None:
        raise NotFound("Document not found")
    return document
