"""The outbox: message rows written in the caller's transaction, a worker woken only after it commits.

As for webhooks (core/webhooks/outbox.py), the database is the queue: after a commit that queued messages,
one drain job is queued unless one is already waiting; the periodic sweep wakes a worker for anything whose
job was lost. Messages are rendered here, in the request, so the row holds exactly what is sent.
"""
from __future__ import annotations

import secrets
from collections.abc import Sequence

from markupsafe import escape
from sqlalchemy import insert, select

from core.config import settings
from core.applications.decision_answers import ANSWERABLE_DECISIONS, decision_response_tokens
from core.db import db, note_write
from core.i18n import DEFAULT_LANGUAGE, supported_language
from core.messages.addresses import address_of, header_safe, valid_email, valid_international_phone
from core.messages.render import RenderedEmail, render_email, render_sms
from core.messages.runtime import runtime
from core.models import Applicant, Application, Cycle, Decision, Institution, Program, new_id
from core.models.messages import Message
from core.queue import DrainSignal
from core.scoping import InstitutionScope

DRAIN_JOB = "jobs.messages.drain"
QUEUE_NAME = "messages"
DECISION_TEMPLATE = "decision"
RESPONSE_PATH = "/decisions/respond/"
# Stand-ins for an applicant's own values while a template is rendered once for many applicants.
_STAND_IN = secrets.token_hex(6)
FIRST_NAME, LAST_NAME, LINK = (f"KaribuFirstName{_STAND_IN}", f"KaribuLastName{_STAND_IN}",
                               f"KaribuLink{_STAND_IN}")


def response_links(decisions: Sequence[Decision]) -> dict[str, str]:
    """The applicants' absolute accept/decline links (PUBLIC_BASE_URL + /decisions/respond/<token>) of the
    decisions that can be answered, by decision id."""
    base = settings().PUBLIC_BASE_URL.rstrip("/") + RESPONSE_PATH
    tokens = decision_response_tokens(d for d in decisions if d.status in ANSWERABLE_DECISIONS)
    return {decision_id: base + token for decision_id, token in tokens.items()}


def sms_enabled() -> bool:
    return settings().SMS_PROVIDER.strip().lower() == "africastalking"


def queue_decision_messages(decisions: Sequence[Decision]) -> int:
    """Write the messages of decisions just sent, in the current session: an email to each applicant, and an
    SMS when SMS is on and the applicant gave a phone number. Returns how many rows were written.

    A recipient that cannot be written to (a malformed address, a local phone number) gives a `failed`
    row that says why, so staff see it on the file; nothing is sent for it.
    """
    if not decisions:
        return 0
    by_application = {decision.application_id: decision for decision in decisions}
    rows = db.session.execute(
        select(Application.id, Applicant, Program.name, Cycle.name, Institution)
        .join(Applicant, Applicant.id == Application.applicant_id)
        .join(Program, Program.id == Application.program_id)
        .join(Cycle, Cycle.id == Application.cycle_id)
        .join(Institution, Institution.id == Application.institution_id)
        .where(Application.id.in_(list(by_application)))
    ).all()
    config = settings()
    sender_domain = address_of(config.MAIL_DEFAULT_SENDER).rpartition("@")[2] or "karibu.localhost"
    with_sms = sms_enabled()
    links = response_links(decisions)
    now = runtime.clock.now()
    messages: list[dict] = []
    templates = _RenderedOnce()
    for application_id, applicant, program_name, cycle_name, institution in rows:
        decision = by_application[application_id]
        language = _language_of(applicant, institution)
        answerable = decision.status in ANSWERABLE_DECISIONS
        shared = (language, institution.name, program_name, cycle_name, decision.status, answerable)
        personal = {LINK: links.get(decision.id, ""), FIRST_NAME: applicant.first_name,
                    LAST_NAME: applicant.last_name}
        email = templates.email(shared, personal)
        message_id = new_id("msg")
        messages.append(_row(
            message_id, decision, "email", applicant.email, language, now,
            recipient_name=f"{applicant.first_name} {applicant.last_name}", subject=email.subject,
            body_text=email.text, body_html=email.html, message_id_header=f"<{message_id}@{sender_domain}>",
            problem=None if valid_email(applicant.email) else "Not a valid email address; nothing was sent."))
        if with_sms and applicant.phone:
            messages.append(_row(
                new_id("msg"), decision, "sms", applicant.phone, language, now,
                recipient_name=f"{applicant.first_name} {applicant.last_name}",
                body_text=templates.sms(shared, personal),
                problem=None if valid_international_phone(applicant.phone) else
                "The phone number is not in international format (+ and country code); nothing was sent."))
    _write(messages)
    if any(message["status"] == "queued" for message in messages):
        drain_after_commit()
    return len(messages)


def _write(rows: list[dict]) -> None:
    """Insert the rows in the session's transaction: with COPY on PostgreSQL (a bulk send writes hundreds of
    rows inside the request; COPY takes about half the time of a multi-row INSERT), else one INSERT."""
    if not rows:
        return
    db.session.flush()  # the decisions the rows refer to are written first
    connection = db.session.connection()
    if connection.dialect.name != "postgresql":
        connection.execute(insert(Message.__table__), rows)
        return
    columns = list(rows[0])
    note_write(connection)
    with connection.connection.driver_connection.cursor() as cursor:
        with cursor.copy(f"COPY messages ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([row[column] for column in columns])


class _RenderedOnce:
    """Renders each distinct (language, institution, program, cycle, decision) once, with stand-ins for the
    applicant's name and link, and fills those in per applicant: a bulk send of 500 decisions renders its
    templates a handful of times, not 500. HTML gets the values escaped, text gets them as they are."""

    def __init__(self):
        self._emails: dict[tuple, RenderedEmail] = {}
        self._sms: dict[tuple, str] = {}

    @staticmethod
    def _context(shared: tuple) -> dict:
        language, institution, program, cycle, decision, answerable = shared
        return {"first_name": FIRST_NAME, "last_name": LAST_NAME, "institution": institution, "program": program,
                "cycle": cycle, "decision": decision, "language": language, "link": LINK if answerable else None}

    @staticmethod
    def _fill(text: str, personal: dict, html: bool = False) -> str:
        for stand_in, value in personal.items():  # the link first: names can never contain a later stand-in
            text = text.replace(stand_in, str(escape(value)) if html else value)
        return text

    def email(self, shared: tuple, personal: dict) -> RenderedEmail:
        if shared not in self._emails:
            self._emails[shared] = render_email(DECISION_TEMPLATE, shared[0], self._context(shared))
        template = self._emails[shared]
        return RenderedEmail(subject=self._fill(template.subject, personal),
                             text=self._fill(template.text, personal),
                             html=self._fill(template.html, personal, html=True))

    def sms(self, shared: tuple, personal: dict) -> str:
        if shared not in self._sms:
            self._sms[shared] = render_sms(DECISION_TEMPLATE, shared[0], self._context(shared))
        return self._fill(self._sms[shared], personal)


def _language_of(applicant: Applicant, institution: Institution) -> str:
    return (supported_language(applicant.language) or supported_language(institution.default_language)
            or DEFAULT_LANGUAGE)


def _row(message_id: str, decision: Decision, channel: str, recipient: str, language: str, now, *,
         recipient_name: str, body_text: str, subject: str = "", body_html: str | None = None,
         message_id_header: str | None = None, problem: str | None) -> dict:
    return {
        "id": message_id, "institution_id": decision.institution_id, "application_id": decision.application_id,
        "decision_id": decision.id, "channel": channel, "recipient": header_safe(recipient, 254),
        "recipient_name": header_safe(recipient_name), "template": DECISION_TEMPLATE, "language": language,
        "subject": header_safe(subject, 300), "body_text": body_text, "body_html": body_html,
        "message_id_header": message_id_header, "status": "failed" if problem else "queued", "attempts": 0,
        "next_attempt_at": None if problem else now, "lease_token": None, "lease_expires_at": None,
        "last_error": problem, "provider_id": None, "sent_at": None, "created_at": now, "updated_at": now,
    }


# Wake-ups of the message drain (jobs/messages.py), after the commit that wrote the messages.
_drain = DrainSignal("messages", QUEUE_NAME, DRAIN_JOB)
drain_after_commit = _drain.after_commit
signal_drain = _drain.signal
drain_started = _drain.started


def queue_staff_email(scope: InstitutionScope, recipient: str, template: str, language: str | None,
                      context: dict) -> Message:
    """Write one email to a staff member (an invitation, a password reset) in the current session, rendered
    from `templates/staff_messages/<template>.*`; the worker sends it after the commit, like applicants'
    messages, and admins see it on the Messages page (its private link hidden: core.messages.log)."""
    language = supported_language(language) or DEFAULT_LANGUAGE
    email = render_email(template, language, {**context, "language": language}, folder="staff_messages")
    sender_domain = address_of(settings().MAIL_DEFAULT_SENDER).rpartition("@")[2] or "karibu.localhost"
    now = runtime.clock.now()
    message_id = new_id("msg")
    message = Message(
        id=message_id, institution_id=scope.institution_id, channel="email", recipient=header_safe(recipient, 254),
        template=template, language=language, subject=header_safe(email.subject, 300), body_text=email.text,
        body_html=email.html, message_id_header=f"<{message_id}@{sender_domain}>", status="queued", attempts=0,
        next_attempt_at=now, created_at=now, updated_at=now)
    db.session.add(message)
    drain_after_commit()
    return message
