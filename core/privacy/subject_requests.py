"""Data-subject requests for a person (records linked by email or phone): export all of it as a zip, or erase it.

What is exported, erased and kept: docs/operations.md, "Data-subject requests".
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote_plus, urlencode

from sqlalchemy import func, or_, select, update

from core.audit.recording import AuditEntry
from core.applications.documents import document_storage
from core.applications.search_text import fold
from core.errors import Conflict, InvalidInput, NotFound
from core.db import db
from core.models import (
    Applicant, ApplicantCheck, Application, AuditLog, BulkChange, Decision, Document, Event, Institution, Payment,
    SavedView, utcnow,
)
from core.models.messages import Message
from core.models.webhooks import WebhookAttempt, WebhookDelivery
from core.scoping import InstitutionScope

if TYPE_CHECKING:
    from zipstream import ZipStream

EXPORT_FORMAT = "karibu.applicant-export.v2"
ERASED = "[erased]"
ERASED_EMAIL = "erased@erased.invalid"
# Name parts and search words shorter than this are not looked for (they would match unrelated words).
MIN_SCRUBBED_TERM = 3
# A phone number links records only when it has at least this many digits (E.164's shortest).
MIN_LINKING_PHONE_DIGITS = 7
MAX_REASON = 500
_PHONE_SEPARATORS = " -().\t"
_LETTERS = re.compile(r"[^\W\d_]+")
# Query parameters that carry text typed to find someone (the list's and the API's `q`, and the like).
SEARCH_PARAMETERS = frozenset({"q", "query", "search", "name", "first_name", "last_name", "email", "phone"})
# A search parameter written into free text (an audit target such as `bulk_…: 3 matching q=wanji&stage=…`).
_EMBEDDED_SEARCH = re.compile(rf"(?<![\w])({'|'.join(sorted(SEARCH_PARAMETERS))})=([^&\s#]*)", re.IGNORECASE)


def normalized_email(email: str | None) -> str:
    return (email or "").strip().lower()


def normalized_phone(phone: str | None) -> str:
    """The number without separators (a leading + kept); empty when it is too short to identify anyone."""
    number = "".join(ch for ch in (phone or "").strip() if ch not in _PHONE_SEPARATORS)
    return number if sum(ch.isdigit() for ch in number) >= MIN_LINKING_PHONE_DIGITS else ""


def _normalized_phone_column():
    column = Applicant.phone
    for separator in _PHONE_SEPARATORS:
        column = func.replace(column, separator, "")
    return column


@dataclass(frozen=True)
class PersonMarks:
    """What names the person in free text: `terms` (names, emails, phones) and `word_sources` (for partial searches)."""
    terms: tuple[str, ...]
    word_sources: tuple[str, ...]

    @classmethod
    def of(cls, applicants: list[Applicant]) -> PersonMarks:
        terms: set[str] = set()
        sources: set[str] = set()
        for applicant in applicants:
            if applicant.erased_at is not None:
                continue  # a tombstone names nobody
            first, last = (applicant.first_name or "").strip(), (applicant.last_name or "").strip()
            for name in (first, last, f"{first} {last}"):
                terms.update({name.lower(), fold(name)})
            parts = {part for part in _LETTERS.findall(fold(f"{first} {last}")) if len(part) >= MIN_SCRUBBED_TERM}
            terms.update(parts)
            sources.update(parts)
            email = normalized_email(applicant.email)
            terms.add(email)
            local_part = fold(email.partition("@")[0])
            sources.update(word for word in _LETTERS.findall(local_part) if len(word) >= MIN_SCRUBBED_TERM)
            phone = normalized_phone(applicant.phone)
            if phone:
                terms.update({phone, phone.lstrip("+"), (applicant.phone or "").strip().lower()})
        kept = {term for term in terms if len(term) >= MIN_SCRUBBED_TERM}
        return cls(terms=tuple(sorted(kept, key=len, reverse=True)),  # longest first: full name before parts
                   word_sources=tuple(sorted(sources)))

    def variants(self) -> list[str]:
        """Each term as it may be stored: as typed, and URL-encoded (in paths and query strings)."""
        forms = {form.lower() for term in self.terms
                 for form in (term, quote(term, safe=""), quote_plus(term, safe=""))}
        return sorted(forms, key=len, reverse=True)

    @cached_property
    def _pattern(self) -> re.Pattern | None:
        """Any variant as a whole word (no letter or digit on either side): `ann` is not in `planning`."""
        if not self.terms:
            return None
        alternatives = "|".join(re.escape(variant) for variant in self.variants())
        return re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])", re.IGNORECASE)

    def search_trigrams(self) -> set[str]:
        """Every 3-letter piece of the word sources: a stored text holding a partial search has one."""
        return {source[i:i + MIN_SCRUBBED_TERM] for source in self.word_sources
                for i in range(len(source) - MIN_SCRUBBED_TERM + 1)}

    def scrub(self, text: str | None) -> str | None:
        """`text` with every term (any case, as typed or URL-encoded) replaced by `[erased]`, and the value of a
        search parameter written into it (`q=…`) replaced whole when it is about the person."""
        if not text or self._pattern is None:
            return text
        text = _EMBEDDED_SEARCH.sub(
            lambda match: f"{match.group(1)}={ERASED}" if self.names_person(match.group(1), unquote_plus(
                match.group(2))) else match.group(0), text)
        return self._pattern.sub(ERASED, text)

    def names_person(self, name: str, value: str) -> bool:
        """Whether a query parameter's value is about the person (a term, or a partial text search of their name)."""
        if self._pattern is None:
            return False
        if self._pattern.search(value) or self._pattern.search(fold(value)):
            return True
        if name.lower() not in SEARCH_PARAMETERS:
            return False
        words = [word for word in _LETTERS.findall(fold(value)) if len(word) >= MIN_SCRUBBED_TERM]
        return any(word in source for word in words for source in self.word_sources)

    def scrub_query(self, query: str | None) -> str | None:
        """A stored query string with each value about the person replaced whole by `[erased]`."""
        if not query:
            return query
        pairs = parse_qsl(query, keep_blank_values=True)
        cleaned = [(name, ERASED if self.names_person(name, value) else value) for name, value in pairs]
        if cleaned == pairs:
            return self.scrub(query)
        return self.scrub(urlencode(cleaned, safe=",:[]"))

    def scrub_filters(self, filters: dict) -> dict:
        """A stored filter set (a bulk change's) with each value about the person replaced whole."""
        return {name: ERASED if isinstance(value, str) and self.names_person(name, value) else self.scrub_json(value)
                for name, value in filters.items()}

    def scrub_json(self, value: Any) -> Any:
        """A JSON value with every string scrubbed (keys are ours and stay)."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, list):
            return [self.scrub_json(item) for item in value]
        if isinstance(value, dict):
            return {key: self.scrub_json(item) for key, item in value.items()}
        return value


@dataclass
class PersonData:
    applicant: Applicant  # the record asked about
    applicants: list[Applicant]  # every record of the person, the one asked about first
    applications: list[Application]
    decisions: list[Decision]
    payments: list[Payment]
    documents: list[Document]
    checks: list[ApplicantCheck]
    events: list[Event]
    messages: list[Message]
    marks: PersonMarks
    audit_rows: list[AuditLog] = field(default_factory=list)
    saved_views: list[SavedView] = field(default_factory=list)
    bulk_changes: list[BulkChange] = field(default_factory=list)

    @property
    def applicant_ids(self) -> list[str]:
        return [applicant.id for applicant in self.applicants]

    def identifiers(self) -> list[str]:
        """Every id that names this person or one of their records (what audit rows refer to)."""
        rows = (self.applicants, self.applications, self.decisions, self.payments, self.documents, self.checks,
                self.messages)
        return [row.id for group in rows for row in group]

    def counts(self) -> dict[str, int]:
        """How many of each kind of record the person has (what the privacy page shows before an erase)."""
        return {"applicant_records": len(self.applicants), "applications": len(self.applications),
                "decisions": len(self.decisions), "payments": len(self.payments),
                "documents": len(self.documents), "verification_checks": len(self.checks),
                "events": len(self.events), "messages": len(self.messages), "audit_rows": len(self.audit_rows),
                "saved_views": len(self.saved_views), "bulk_changes": len(self.bulk_changes)}


def find_applicant(scope: InstitutionScope, applicant_or_application_id: str) -> Applicant:
    """The applicant with this id, or the applicant of the application with this id (in this institution)."""
    applicant = scope.get(Applicant, applicant_or_application_id)
    if applicant is None:
        application = scope.get(Application, applicant_or_application_id)
        applicant = scope.get(Applicant, application.applicant_id) if application is not None else None
    if applicant is None:
        raise NotFound("Applicant not found")
    return applicant


def person_records(scope: InstitutionScope, applicant: Applicant) -> list[Applicant]:
    """Every applicant record of the institution that is the same person as `applicant` (docs/operations.md),
    `applicant` first, then by creation. An erased record is only itself."""
    found = {applicant.id: applicant}
    if applicant.erased_at is None:
        emails: set[str] = set()
        phones: set[str] = set()
        reached = [applicant]
        while reached:
            new_emails = {normalized_email(row.email) for row in reached} - emails - {""}
            new_phones = {normalized_phone(row.phone) for row in reached} - phones - {""}
            emails |= new_emails
            phones |= new_phones
            links = ([func.lower(func.trim(Applicant.email)).in_(sorted(new_emails))] if new_emails else []) + \
                ([_normalized_phone_column().in_(sorted(new_phones))] if new_phones else [])
            if not links:
                break
            reached = [row for row in db.session.scalars(
                scope.select(Applicant).where(Applicant.erased_at.is_(None), or_(*links))) if row.id not in found]
            found.update((row.id, row) for row in reached)
    others = sorted((row for row in found.values() if row.id != applicant.id), key=lambda row: (row.created_at, row.id))
    return [applicant, *others]


def collect(scope: InstitutionScope, applicant: Applicant) -> PersonData:
    """Everything held about the person `applicant` is a record of."""
    applicants = person_records(scope, applicant)
    applications = list(db.session.scalars(
        scope.select(Application).where(Application.applicant_id.in_([row.id for row in applicants]))
        .order_by(Application.submitted_at, Application.id)))
    ids = [application.id for application in applications]

    def owned(model, *order):
        return list(db.session.scalars(scope.select(model).where(model.application_id.in_(ids)).order_by(*order)))

    data = PersonData(
        applicant=applicant, applicants=applicants, applications=applications,
        decisions=owned(Decision, Decision.created_at, Decision.id),
        payments=owned(Payment, Payment.created_at, Payment.id),
        documents=owned(Document, Document.created_at, Document.id),
        checks=owned(ApplicantCheck, ApplicantCheck.created_at, ApplicantCheck.id),
        events=list(db.session.scalars(scope.select(Event).where(Event.subject_id.in_(ids))
                                       .order_by(Event.occurred_at, Event.id))),
        messages=owned(Message, Message.created_at, Message.id),
        marks=PersonMarks.of(applicants),
    )
    data.audit_rows = _audit_rows(scope, data)
    data.saved_views = [view for view in db.session.scalars(scope.select(SavedView).order_by(SavedView.id))
                        if data.marks.scrub_query(view.query) != view.query
                        or data.marks.scrub(view.name) != view.name]
    data.bulk_changes = [change for change in db.session.scalars(scope.select(BulkChange).order_by(BulkChange.id))
                         if data.marks.scrub_filters(change.filters or {}) != (change.filters or {})
                         or data.marks.scrub(change.error) != change.error]
    return data


_AUDIT_TEXT = ("target", "path", "query", "detail")
_CONDITIONS_PER_QUERY = 400


def _audit_rows(scope: InstitutionScope, data: PersonData) -> list[AuditLog]:
    """Audit rows that name one of the person's records by id, or the person (a search by name, email or
    phone, whole or partial). The database narrows the rows down; `_names_person` decides."""
    columns = [getattr(AuditLog, name) for name in _AUDIT_TEXT]
    identifiers = data.identifiers()
    conditions = [
        *(column.contains(identifier, autoescape=True) for identifier in identifiers for column in columns),
        *(func.lower(column).contains(term, autoescape=True) for term in data.marks.variants() for column in columns),
        *(func.lower(column).contains(piece, autoescape=True) for piece in data.marks.search_trigrams()
          for column in columns),
    ]
    # A person with many records makes many conditions: asked in groups, as SQLite refuses an expression tree
    # deeper than 1000 (an OR of n terms nests n deep).
    found: dict[int, AuditLog] = {}
    for start in range(0, len(conditions), _CONDITIONS_PER_QUERY):
        for row in db.session.scalars(scope.select(AuditLog).where(
                or_(*conditions[start:start + _CONDITIONS_PER_QUERY]))):
            found[row.id] = row
    return [found[row_id] for row_id in sorted(found) if _names_person(found[row_id], identifiers, data.marks)]


def _names_person(row: AuditLog, identifiers: list[str], marks: PersonMarks) -> bool:
    texts = [getattr(row, name) or "" for name in _AUDIT_TEXT]
    return any(identifier in text for identifier in identifiers for text in texts) \
        or _masked_audit_text(row, marks) != tuple(texts)


def _masked_audit_text(row: AuditLog, marks: PersonMarks) -> tuple[str, ...]:
    """target, path, query and detail of an audit row without the person: their terms masked in each, and in
    the query every value about them (a search for them, even a partial one) masked whole."""
    return (marks.scrub(row.target) or "", marks.scrub(row.path) or "", marks.scrub_query(row.query) or "",
            marks.scrub(row.detail) or "")


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


def export_document(data: PersonData, institution: Institution, stored: set[str]) -> dict:
    """The JSON document of an export: every record of the person, applications grouped with what they own."""
    def for_application(rows, application_id):
        return [row for row in rows if row.application_id == application_id]

    applications = []
    for application in data.applications:
        applications.append({
            **_columns(application, leave_out=("institution_id", "search_text")),
            "decisions": [_columns(row, ("institution_id", "application_id"))
                          for row in for_application(data.decisions, application.id)],
            "payments": [_columns(row, ("institution_id", "application_id"))
                         for row in for_application(data.payments, application.id)],
            "documents": [{**_columns(row, ("institution_id", "application_id")),
                           "file": _document_path(row) if row.sha256 in stored else None}
                          for row in for_application(data.documents, application.id)],
            "verification_checks": [_columns(row, ("institution_id", "application_id"))
                                    for row in for_application(data.checks, application.id)],
            "events": [_columns(row, ("institution_id",)) for row in data.events
                       if row.subject_id == application.id],
            "messages": [_columns(row, ("institution_id", "application_id", "lease_token", "lease_expires_at"))
                         for row in for_application(data.messages, application.id)],
        })
    records = [_columns(row, leave_out=("institution_id", "search_text")) for row in data.applicants]
    return {
        "format": EXPORT_FORMAT,
        "exported_at": _value(utcnow()),
        "institution": {"id": institution.id, "name": institution.name},
        "applicant": records[0],
        "applicants": records,
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
    _audit("applicant.export", scope, data, actor=actor, reason=reason, source=source, audit=audit)
    db.session.commit()
    return applicant, archive


# --- erase ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ErasureReport:
    applicant_id: str
    applicant_ids: list[str]
    applications: int
    documents_deleted: int
    files_deleted: int
    events_scrubbed: int
    messages_scrubbed: int
    payments_scrubbed: int
    audit_rows_scrubbed: int
    saved_views_scrubbed: int
    bulk_changes_scrubbed: int
    forced: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def awaiting_answer(data: PersonData) -> list[Decision]:
    """Sent decisions the person has not answered yet."""
    return [decision for decision in data.decisions if decision.sent_at is not None and decision.response is None]


def erase(scope: InstitutionScope, applicant_or_application_id: str, *, actor: str, reason: str, source: str,
          audit: Callable[[AuditEntry], None], force: bool = False) -> ErasureReport:
    """Erase every record of the person (docs/operations.md), in one commit; files go after it."""
    reason = _checked_reason(reason)
    applicant = find_applicant(scope, applicant_or_application_id)
    if applicant.erased_at is not None:
        raise Conflict("This applicant's personal data was already erased")
    data = collect(scope, applicant)
    waiting = awaiting_answer(data)
    if waiting and not force:
        raise Conflict(f"A decision awaits this applicant's answer ({', '.join(d.id for d in waiting)}); "
                       "erase anyway only if the applicant asked knowing this (force)")
    marks = data.marks

    # Audit rows that name the person: their names, email, phone and searches for them go, the rows stay.
    for row in data.audit_rows:
        row.target, row.path, row.query, row.detail = _masked_audit_text(row, marks)
    for view in data.saved_views:
        view.query = marks.scrub_query(view.query)
        if marks.scrub(view.name) != view.name:  # names are unique per user: the id keeps them apart
            view.name = f"{ERASED} {view.id}"
    for change in data.bulk_changes:
        change.filters = marks.scrub_filters(change.filters or {})
        change.error = marks.scrub(change.error)

    # Stored event payloads (webhook bodies are built from them, retries included) lose the person.
    events_scrubbed = 0
    for event in data.events:
        payload = marks.scrub_json(event.payload)
        if isinstance(payload, dict) and isinstance(payload.get("applicant"), dict):
            payload = {**payload, "applicant": {"first_name": ERASED, "last_name": ERASED}}
        if payload != event.payload:
            event.payload = payload
            events_scrubbed += 1
    event_ids = [event.id for event in data.events]
    if event_ids:
        # What receivers answered may echo the payload: keep the status code, drop the text and headers.
        db.session.execute(
            update(WebhookAttempt)
            .where(WebhookAttempt.delivery_id.in_(select(WebhookDelivery.id).where(
                WebhookDelivery.event_id.in_(event_ids))))
            .values(response_excerpt=None, error=None, response_headers=None))

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
        message.private_link = None
        message.last_error = marks.scrub(message.last_error)
    # Payments and their amounts stay for the accounts; a processor reference that names the person does not
    # (the payment's id keeps it unique per processor).
    payments_scrubbed = 0
    for payment in data.payments:
        if marks.scrub(payment.processor_reference) != payment.processor_reference:
            payment.processor_reference = f"{ERASED}-{payment.id}"
            payments_scrubbed += 1
    hashes = {document.sha256 for document in data.documents}
    for document in data.documents:
        db.session.delete(document)

    now = utcnow()
    for record in data.applicants:
        record.first_name = ERASED
        record.last_name = ERASED
        record.email = ERASED_EMAIL
        record.phone = None
        record.gender = None
        record.date_of_birth = None
        record.search_text = ""
        record.erased_at = now
    for application in data.applications:
        application.updated_at = now  # partners syncing by updated_since see the tombstone
    db.session.flush()

    # Files no other document uses any more go after the commit (a rolled-back erase loses no file).
    still_used = set(db.session.scalars(select(Document.sha256).where(Document.sha256.in_(hashes)))) if hashes \
        else set()
    report = ErasureReport(
        applicant_id=applicant.id, applicant_ids=data.applicant_ids, applications=len(data.applications),
        documents_deleted=len(data.documents), files_deleted=len(hashes - still_used),
        events_scrubbed=events_scrubbed, messages_scrubbed=len(data.messages), payments_scrubbed=payments_scrubbed,
        audit_rows_scrubbed=len(data.audit_rows), saved_views_scrubbed=len(data.saved_views),
        bulk_changes_scrubbed=len(data.bulk_changes), forced=bool(waiting))
    db.session.commit()
    storage = document_storage()
    for digest in hashes - still_used:
        storage.path(digest).unlink(missing_ok=True)
    # The reason may name the person too: it is kept without them.
    _audit("applicant.erase", scope, data, actor=actor, reason=marks.scrub(reason), source=source,
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


def _audit(action: str, scope: InstitutionScope, data: PersonData, *, actor: str, reason: str, source: str,
           audit: Callable[[AuditEntry], None], forced: bool = False) -> None:
    """The request's audit row: the record asked about is the target, every record of the person in the detail."""
    detail = f"reason: {reason}; records: {', '.join(data.applicant_ids)}" \
        + (" (forced while a decision awaited an answer)" if forced else "")
    audit(AuditEntry(source=source, institution_id=scope.institution_id, actor=actor, action=action,
                     target=data.applicant.id, detail=detail, status=200))
