"""Data-subject requests for one applicant: export everything Karibu holds about the person, or erase it.

*Export* is one zip: `applicant.json` (the person, every application with its decisions, payments, documents,
verification checks and events, and the audit rows about them) and the documents under `documents/`.

*Erase* turns the applicant into a tombstone: names, email, phone, gender and date of birth replaced, the
documents deleted (their files too, unless another document has the same content), applicant names taken out
of stored event payloads (so a retried webhook carries none) and of receivers' stored answers, the names and
email taken out of audit rows. Ids, applications (stage, decision, counts), decisions, payments and the
billing ledger stay. It emits no event. It is refused while a sent decision awaits the applicant's answer,
unless forced. Both are audited with who asked and why.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus

from sqlalchemy import func, or_, select, update

from core.audit.recording import AuditEntry
from core.applications.documents import document_storage
from core.errors import Conflict, InvalidInput, NotFound
from core.db import db
from core.models import (
    Applicant, ApplicantCheck, Application, AuditLog, Decision, Document, Event, Institution, Payment, utcnow,
)
from core.models.messages import Message
from core.models.webhooks import WebhookAttempt, WebhookDelivery
from core.scoping import InstitutionScope

if TYPE_CHECKING:
    from zipstream import ZipStream

EXPORT_FORMAT = "karibu.applicant-export.v1"
ERASED = "[erased]"
ERASED_EMAIL = "erased@erased.invalid"
# Name fragments shorter than this are not searched for in audit text (they would match unrelated words).
MIN_SCRUBBED_TERM = 3
MAX_REASON = 500


@dataclass
class ApplicantData:
    applicant: Applicant
    applications: list[Application]
    decisions: list[Decision]
    payments: list[Payment]
    documents: list[Document]
    checks: list[ApplicantCheck]
    events: list[Event]
    messages: list[Message]
    audit_rows: list[AuditLog] = field(default_factory=list)

    @property
    def application_ids(self) -> list[str]:
        return [application.id for application in self.applications]

    def identifiers(self) -> list[str]:
        """Every id that names this person or one of their records (what audit rows refer to)."""
        rows = (self.applications, self.decisions, self.payments, self.documents, self.checks, self.messages)
        return [self.applicant.id, *(row.id for group in rows for row in group)]


def find_applicant(scope: InstitutionScope, applicant_or_application_id: str) -> Applicant:
    """The applicant with this id, or the applicant of the application with this id (in this institution)."""
    applicant = scope.get(Applicant, applicant_or_application_id)
    if applicant is None:
        application = scope.get(Application, applicant_or_application_id)
        applicant = scope.get(Applicant, application.applicant_id) if application is not None else None
    if applicant is None:
        raise NotFound("Applicant not found")
    return applicant


def collect(scope: InstitutionScope, applicant: Applicant) -> ApplicantData:
    applications = list(db.session.scalars(
        scope.select(Application).where(Application.applicant_id == applicant.id)
        .order_by(Application.submitted_at, Application.id)))
    ids = [application.id for application in applications]

    def owned(model, *order):
        return list(db.session.scalars(scope.select(model).where(model.application_id.in_(ids)).order_by(*order)))

    data = ApplicantData(
        applicant=applicant, applications=applications,
        decisions=owned(Decision, Decision.created_at, Decision.id),
        payments=owned(Payment, Payment.created_at, Payment.id),
        documents=owned(Document, Document.created_at, Document.id),
        checks=owned(ApplicantCheck, ApplicantCheck.created_at, ApplicantCheck.id),
        events=list(db.session.scalars(scope.select(Event).where(Event.subject_id.in_(ids))
                                       .order_by(Event.occurred_at, Event.id))),
        messages=owned(Message, Message.created_at, Message.id),
    )
    data.audit_rows = list(db.session.scalars(
        scope.select(AuditLog).where(_mentions(data.identifiers(), _scrub_terms(applicant))).order_by(AuditLog.id)))
    return data


def _mentions(identifiers: list[str], terms: list[str]):
    """Audit rows that name one of the person's records by id, or the person (searches by name or email)."""
    columns = (AuditLog.target, AuditLog.path, AuditLog.query, AuditLog.detail)
    return or_(*(column.contains(identifier, autoescape=True) for identifier in identifiers for column in columns),
               *(func.lower(column).contains(term, autoescape=True) for term in terms for column in columns))


# --- export ---------------------------------------------------------------------------------------------------

def _value(value):
    if isinstance(value, datetime):
        return value.isoformat() + "Z"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _columns(row, leave_out: tuple[str, ...] = ()) -> dict:
    return {column.key: _value(getattr(row, column.key)) for column in row.__table__.columns
            if column.key not in leave_out}


def _document_path(document: Document) -> str:
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", document.filename)[:100] or "document"
    return f"documents/{document.id}-{safe_name}"


def export_document(data: ApplicantData, institution: Institution, stored: set[str]) -> dict:
    """The JSON document of an export: every record about the person, grouped by application. `file` names
    the document's entry in the zip (null when its content is missing from storage)."""
    def for_application(rows, application_id):
        return [row for row in rows if row.application_id == application_id]

    applications = []
    for application in data.applications:
        applications.append({
            **_columns(application, leave_out=("institution_id", "applicant_id")),
            "decisions": [_columns(row, ("institution_id", "application_id"))
                          for row in for_application(data.decisions, application.id)],
            "payments": [_columns(row, ("institution_id", "application_id"))
                         for row in for_application(data.payments, application.id)],
            "documents": [{**_columns(row, ("institution_id", "application_id")), "file": _document_path(row) if row.sha256 in stored else None}
                          for row in for_application(data.documents, application.id)],
            "verification_checks": [_columns(row, ("institution_id", "application_id"))
                                    for row in for_application(data.checks, application.id)],
            "events": [_columns(row, ("institution_id",)) for row in data.events
                       if row.subject_id == application.id],
            "messages": [_columns(row, ("institution_id", "application_id", "lease_token", "lease_expires_at"))
                         for row in for_application(data.messages, application.id)],
        })
    return {
        "format": EXPORT_FORMAT,
        "exported_at": _value(utcnow()),
        "institution": {"id": institution.id, "name": institution.name},
        "applicant": _columns(data.applicant, leave_out=("institution_id", "search_text")),
        "applications": applications,
        "audit_log": [_columns(row, ("institution_id",)) for row in data.audit_rows],
    }


def export_zip(scope: InstitutionScope, applicant_or_application_id: str, *, actor: str, reason: str,
               source: str, audit: Callable[[AuditEntry], None]) -> tuple[Applicant, ZipStream]:
    """The export as a streamed zip (documents read from storage as the zip is written); audited first.

    `audit` records the entry: the portal declares it for the request's audit row, the CLI writes it.
    """
    reason = _checked_reason(reason)
    applicant = find_applicant(scope, applicant_or_application_id)
    data = collect(scope, applicant)
    institution = db.session.get(Institution, scope.institution_id)
    storage = document_storage()
    stored = {row.sha256 for row in data.documents if storage.exists(row.sha256)}
    document = export_document(data, institution, stored)
    from zipstream import ZipStream  # loaded by the first data-subject export, not by every web worker

    archive = ZipStream(sized=False)
    archive.add(json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8"), "applicant.json")
    for row in data.documents:
        if row.sha256 in stored:
            archive.add_path(str(storage.path(row.sha256)), _document_path(row))
    _audit("applicant.export", scope, applicant, actor=actor, reason=reason, source=source, audit=audit)
    db.session.commit()
    return applicant, archive


# --- erase ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ErasureReport:
    applicant_id: str
    applications: int
    documents_deleted: int
    files_deleted: int
    events_scrubbed: int
    audit_rows_scrubbed: int
    forced: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def awaiting_answer(data: ApplicantData) -> list[Decision]:
    """Sent decisions the applicant has not answered yet."""
    return [decision for decision in data.decisions if decision.sent_at is not None and decision.response is None]


def _scrub_terms(applicant: Applicant) -> list[str]:
    """The person's personal strings as they may appear in audit text: raw, lower-cased and URL-encoded."""
    raw = [applicant.first_name, applicant.last_name, f"{applicant.first_name} {applicant.last_name}",
           applicant.email, applicant.phone or ""]
    terms = set()
    for value in raw:
        value = (value or "").strip()
        if len(value) < MIN_SCRUBBED_TERM:
            continue
        for form in (value, quote(value, safe=""), quote_plus(value, safe="")):
            terms.add(form.lower())
    return sorted(terms, key=len, reverse=True)  # longest first: the full name before its parts


def _scrub_text(text: str | None, terms: list[str]) -> str | None:
    if not text:
        return text
    for term in terms:
        text = re.sub(re.escape(term), ERASED, text, flags=re.IGNORECASE)
    return text


def erase(scope: InstitutionScope, applicant_or_application_id: str, *, actor: str, reason: str, source: str,
          audit: Callable[[AuditEntry], None], force: bool = False) -> ErasureReport:
    reason = _checked_reason(reason)
    applicant = find_applicant(scope, applicant_or_application_id)
    if applicant.erased_at is not None:
        raise Conflict("This applicant's personal data was already erased")
    data = collect(scope, applicant)
    waiting = awaiting_answer(data)
    if waiting and not force:
        raise Conflict(f"A decision awaits this applicant's answer ({', '.join(d.id for d in waiting)}); "
                       "erase anyway only if the applicant asked knowing this (force)")
    terms = _scrub_terms(applicant)

    # Audit rows that mention the person: their names and email go, the rows stay.
    audit_scrubbed = 0
    for row in data.audit_rows:
        before = (row.target, row.path, row.query, row.detail)
        for name in ("target", "path", "query", "detail"):
            setattr(row, name, _scrub_text(getattr(row, name), terms))
        audit_scrubbed += (row.target, row.path, row.query, row.detail) != before

    # Stored event payloads (webhook bodies are built from them, retries included) lose the names.
    events_scrubbed = 0
    for event in data.events:
        if isinstance(event.payload, dict) and isinstance(event.payload.get("applicant"), dict):
            event.payload = {**event.payload, "applicant": {"first_name": ERASED, "last_name": ERASED}}
            events_scrubbed += 1
    event_ids = [event.id for event in data.events]
    if event_ids:
        # What receivers answered may echo the payload: keep the status code, drop the text.
        db.session.execute(
            update(WebhookAttempt)
            .where(WebhookAttempt.delivery_id.in_(select(WebhookDelivery.id).where(
                WebhookDelivery.event_id.in_(event_ids))))
            .values(response_excerpt=None, error=None))

    for check in data.checks:
        check.candidate_name = None
        check.reference = None
    # Emails and SMS sent to the person: who, and what they said, go; channel, status and times stay.
    for message in data.messages:
        message.recipient = ERASED_EMAIL if message.channel == "email" else ERASED
        message.recipient_name = ERASED
        message.subject = ERASED if message.subject else message.subject
        message.body_text = ERASED
        message.body_html = None
        message.last_error = _scrub_text(message.last_error, terms)
    hashes = {document.sha256 for document in data.documents}
    for document in data.documents:
        db.session.delete(document)

    applicant.first_name = ERASED
    applicant.last_name = ERASED
    applicant.email = ERASED_EMAIL
    applicant.phone = None
    applicant.gender = None
    applicant.date_of_birth = None
    applicant.search_text = ""
    applicant.erased_at = utcnow()
    now = utcnow()
    for application in data.applications:
        application.updated_at = now  # partners syncing by updated_since see the tombstone
    db.session.flush()

    # Files no other document uses any more go after the commit (a rolled-back erase loses no file).
    still_used = set(db.session.scalars(select(Document.sha256).where(Document.sha256.in_(hashes)))) if hashes \
        else set()
    report = ErasureReport(applicant_id=applicant.id, applications=len(data.applications),
                           documents_deleted=len(data.documents), files_deleted=len(hashes - still_used),
                           events_scrubbed=events_scrubbed, audit_rows_scrubbed=audit_scrubbed, forced=bool(waiting))
    db.session.commit()
    storage = document_storage()
    for digest in hashes - still_used:
        storage.path(digest).unlink(missing_ok=True)
    # The reason may name the person too: it is kept without their names.
    _audit("applicant.erase", scope, applicant, actor=actor, reason=_scrub_text(reason, terms), source=source,
           audit=audit, forced=bool(waiting))
    return report


# --- shared ---------------------------------------------------------------------------------------------------

def _checked_reason(reason: str | None) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("Say why this is asked (e.g. the applicant's request of 3 March, ticket 1234)",
                           field="reason")
    if len(reason) > MAX_REASON:
        raise InvalidInput(f"The reason must be at most {MAX_REASON} characters", field="reason")
    return reason


def _audit(action: str, scope: InstitutionScope, applicant: Applicant, *, actor: str, reason: str, source: str,
           audit: Callable[[AuditEntry], None], forced: bool = False) -> None:
    detail = f"reason: {reason}" + (" (forced while a decision awaited an answer)" if forced else "")
    audit(AuditEntry(source=source, institution_id=scope.institution_id, actor=actor, action=action,
                     target=applicant.id, detail=detail, status=200))
