"""Composing messages: decision emails and SMS (and staff emails) rendered and written to the message outbox in
the caller's transaction, so the row holds exactly what is sent; previews rendered by the same code."""
from __future__ import annotations

import io
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import escape
from PIL import Image
from sqlalchemy import insert, select

from core.config import Settings, settings
from core.applications.decision_answers import ANSWERABLE_DECISIONS, RESPONSE_LINK_MAX_AGE, decision_response_tokens
from core.db import db, note_write
from core.errors import InvalidInput, NotFound
from core.i18n import DEFAULT_LANGUAGE, supported_language
from core.institutions.identity import ApplicantIdentity, applicant_identity
from core.institutions.sender_domains import may_send_from
from core.messages.addresses import address_of, header_safe, mailbox, valid_email, \
    valid_international_phone
from core.messages.outbox import drain_signal
from core.messages.private_links import LINK_SLOT, seal
from core.messages.render import RenderedEmail, render_email, render_sms
from core.messages.runtime import runtime
from core.models import Applicant, Application, Cycle, Decision, Institution, Program, new_id
from core.models.admissions import DECISIONS
from core.models.messages import Message
from core.scoping import InstitutionScope
from core.timefmt import applicant_date

DECISION_TEMPLATE = "decision"
RESPONSE_PATH = "/decisions/respond/"
# The answer link of a preview: the answer page says it is not a valid link (no decision exists to answer).
PREVIEW_LINK_TOKEN = "preview-only-not-a-real-link"
# The logo's box in the email's header band (pixels): its height, and its width at most.
LOGO_HEIGHT, LOGO_MAX_WIDTH = 48, 240
SENDER_LIMIT = Message.__table__.c.sender.type.length
# Stand-ins for an applicant's own values while a template is rendered once for many applicants.
_STAND_IN = secrets.token_hex(6)
FIRST_NAME, LAST_NAME, LINK, REFERENCE = (f"KaribuFirstName{_STAND_IN}", f"KaribuLastName{_STAND_IN}",
                                          f"KaribuLink{_STAND_IN}", f"KaribuReference{_STAND_IN}")


def response_links(decisions: Sequence[Decision]) -> dict[str, str]:
    """The applicants' absolute accept/decline links (PUBLIC_BASE_URL + /decisions/respond/<token>) of the
    decisions that can be answered, by decision id."""
    base = settings().PUBLIC_BASE_URL.rstrip("/") + RESPONSE_PATH
    tokens = decision_response_tokens(d for d in decisions if d.status in ANSWERABLE_DECISIONS)
    return {decision_id: base + token for decision_id, token in tokens.items()}


def sms_enabled() -> bool:
    return settings().SMS_PROVIDER.strip().lower() == "africastalking"


def applicant_sender(identity: ApplicantIdentity, config: Settings) -> tuple[str, str | None]:
    """(From, Reply-To) of the institution's emails to applicants: its name with its contact address when that
    address's domain is proven by this institution (core.institutions.sender_domains), else the platform's;
    Reply-To the contact address or None."""
    contact = identity.contact_email if valid_email(identity.contact_email) else None
    address = address_of(config.MAIL_DEFAULT_SENDER)
    if contact and may_send_from(InstitutionScope(identity.institution_id), contact, config):
        address = contact
    name = identity.name
    sender = mailbox(name, address)
    while len(sender) > SENDER_LIMIT:  # a long name is shortened to fit the column (quoting may lengthen it)
        name = name[:len(name) - (len(sender) - SENDER_LIMIT)]
        sender = mailbox(name, address)
    return sender, contact


@dataclass(frozen=True)
class DecisionEmail:
    """A decision email as written to the outbox (and as a preview shows it)."""
    language: str
    sender: str
    reply_to: str | None
    subject: str
    text: str
    html: str


@dataclass(frozen=True)
class EmailPreview:
    """What the applicant would receive for a decision, written nowhere and sent nowhere."""
    sender: str
    reply_to: str | None
    recipient: str
    subject: str
    text: str
    html: str


class _DecisionMessages:
    """The decision messages of one send (or one preview): each institution's identity, sender and logo size
    looked up once, the link's end date computed once, the templates rendered once per combination."""

    def __init__(self):
        self.config = settings()
        self.now = runtime.clock.now()
        self._institutions: dict[str, tuple[ApplicantIdentity, tuple[int, int] | None, str, str | None]] = {}
        self._templates = _RenderedOnce(self.config.PUBLIC_BASE_URL.rstrip("/"))

    def _institution(self, institution: Institution):
        if institution.id not in self._institutions:
            identity = applicant_identity(institution)
            logo_size = _logo_size(institution.logo) if identity.logo_digest else None  # the logo is deferred
            self._institutions[institution.id] = (identity, logo_size,
                                                  *applicant_sender(identity, self.config))
        return self._institutions[institution.id]

    def _shared_and_personal(self, institution: Institution, applicant: Applicant, reference: str,
                             program_name: str, cycle_name: str, status: str, link: str | None
                             ) -> tuple[tuple, dict]:
        identity, logo_size, _, _ = self._institution(institution)
        language = _language_of(applicant, institution)
        answerable = status in ANSWERABLE_DECISIONS
        valid_until = applicant_date(self.now + RESPONSE_LINK_MAX_AGE, identity.time_zone, language) \
            if answerable else None
        shared = (language, identity, logo_size, program_name, cycle_name, status, answerable, valid_until)
        personal = {LINK: link or "", FIRST_NAME: applicant.first_name, LAST_NAME: applicant.last_name,
                    REFERENCE: reference}
        return shared, personal

    def email(self, institution: Institution, applicant: Applicant, reference: str, program_name: str,
              cycle_name: str, status: str, link: str | None) -> DecisionEmail:
        shared, personal = self._shared_and_personal(institution, applicant, reference, program_name, cycle_name,
                                                     status, link)
        _, _, sender, reply_to = self._institution(institution)
        rendered = self._templates.email(shared, personal)
        return DecisionEmail(language=shared[0], sender=sender, reply_to=reply_to, subject=rendered.subject,
                             text=rendered.text, html=rendered.html)

    def sms(self, institution: Institution, applicant: Applicant, reference: str, program_name: str,
            cycle_name: str, status: str, link: str | None) -> str:
        shared, personal = self._shared_and_personal(institution, applicant, reference, program_name, cycle_name,
                                                     status, link)
        return self._templates.sms(shared, personal)


def _logo_size(logo: bytes) -> tuple[int, int]:
    """(width, height) of the logo shown LOGO_HEIGHT high (lower if it would be wider than LOGO_MAX_WIDTH); the
    HTML gives both, so mail clients keep the layout while images are off."""
    with Image.open(io.BytesIO(logo)) as image:
        width, height = image.size
    shown_width = max(1, round(LOGO_HEIGHT * width / height))
    if shown_width <= LOGO_MAX_WIDTH:
        return shown_width, LOGO_HEIGHT
    return LOGO_MAX_WIDTH, max(1, round(LOGO_MAX_WIDTH * height / width))


def _decision_rows(query):
    return db.session.execute(
        query.select_from(Application).join(Applicant, Applicant.id == Application.applicant_id)
        .join(Program, Program.id == Application.program_id)
        .join(Cycle, Cycle.id == Application.cycle_id)
        .join(Institution, Institution.id == Application.institution_id)
    ).all()


def queue_decision_messages(decisions: Sequence[Decision]) -> int:
    """Write, in the current session, an email (and an SMS when SMS is on and there is a phone) per decision just
    sent, a `failed` row for a recipient that cannot be written to; returns how many rows were written."""
    if not decisions:
        return 0
    by_application = {decision.application_id: decision for decision in decisions}
    rows = _decision_rows(select(Application.id, Application.reference, Applicant, Program.name, Cycle.name,
                                 Institution).where(Application.id.in_(list(by_application))))
    sender_domain = address_of(settings().MAIL_DEFAULT_SENDER).rpartition("@")[2] or "karibu.localhost"
    with_sms = sms_enabled()
    links = response_links(decisions)
    composer = _DecisionMessages()
    now = composer.now
    messages: list[dict] = []
    for application_id, reference, applicant, program_name, cycle_name, institution in rows:
        decision = by_application[application_id]
        link = links.get(decision.id)
        slot = LINK_SLOT if link else None  # the link itself is stored only encrypted (core.messages.private_links)
        email = composer.email(institution, applicant, reference, program_name, cycle_name, decision.status, slot)
        message_id = new_id("msg")
        messages.append(_row(
            message_id, decision, "email", applicant.email, email.language, now,
            recipient_name=f"{applicant.first_name} {applicant.last_name}", subject=email.subject,
            body_text=email.text, body_html=email.html, message_id_header=f"<{message_id}@{sender_domain}>",
            sender=email.sender, reply_to=email.reply_to, private_link=seal(link),
            problem=None if valid_email(applicant.email) else "Not a valid email address; nothing was sent.",
            test=institution.is_sandbox))
        if with_sms and applicant.phone:
            messages.append(_row(
                new_id("msg"), decision, "sms", applicant.phone, email.language, now,
                recipient_name=f"{applicant.first_name} {applicant.last_name}",
                body_text=composer.sms(institution, applicant, reference, program_name, cycle_name, decision.status,
                                       slot),
                private_link=seal(link),
                problem=None if valid_international_phone(applicant.phone) else
                "The phone number is not in international format (+ and country code); nothing was sent.",
                test=institution.is_sandbox))
    _write(messages)
    if any(message["status"] == "queued" for message in messages):
        drain_signal.after_commit()
    return len(messages)


def preview_decision_email(scope: InstitutionScope, application_id: str, decision: str) -> EmailPreview:
    """The email `application_id`'s applicant would get if `decision` were sent now (link: PREVIEW_LINK_TOKEN);
    InvalidInput for an unknown decision, NotFound for another institution's application."""
    if decision not in DECISIONS or decision == "none":
        raise InvalidInput(f"decision must be one of: {', '.join(d for d in DECISIONS if d != 'none')}",
                           field="decision")
    rows = _decision_rows(scope.select(Application, Application.reference, Applicant, Program.name, Cycle.name,
                                       Institution).where(Application.id == application_id))
    if not rows:
        raise NotFound("Application not found")
    [(reference, applicant, program_name, cycle_name, institution)] = rows
    link = settings().PUBLIC_BASE_URL.rstrip("/") + RESPONSE_PATH + PREVIEW_LINK_TOKEN \
        if decision in ANSWERABLE_DECISIONS else None
    email = _DecisionMessages().email(institution, applicant, reference, program_name, cycle_name, decision, link)
    return EmailPreview(sender=email.sender, reply_to=email.reply_to,
                        recipient=header_safe(applicant.email, 254),
                        subject=email.subject, text=email.text, html=email.html)


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
    """Renders each distinct (language, institution identity, program, cycle, decision, link end date) once and
    fills in each applicant's name and link (escaped in HTML, as they are in text)."""

    def __init__(self, public_base_url: str):
        self.public_base_url = public_base_url
        self._emails: dict[tuple, RenderedEmail] = {}
        self._sms: dict[tuple, str] = {}

    def _context(self, shared: tuple) -> dict:
        language, identity, logo_size, program, cycle, decision, answerable, valid_until = shared
        return {"first_name": FIRST_NAME, "last_name": LAST_NAME, "reference": REFERENCE, "institution": identity.name, "program": program,
                "cycle": cycle, "decision": decision, "language": language, "link": LINK if answerable else None,
                "valid_until": valid_until, "colour": identity.colour, "contact_email": identity.contact_email,
                "website": identity.website, "footer": identity.footer,
                "logo_url": self.public_base_url + identity.logo_path if identity.logo_path else None,
                "logo_width": logo_size[0] if logo_size else None,
                "logo_height": logo_size[1] if logo_size else None}

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
         message_id_header: str | None = None, sender: str | None = None, reply_to: str | None = None,
         private_link: str | None = None, problem: str | None, test: bool = False) -> dict:
    """A message row: `test` (written, shown, never sent) in test mode, `failed` with a problem, else `queued`."""
    status = "test" if test else "failed" if problem else "queued"
    return {
        "id": message_id, "institution_id": decision.institution_id, "application_id": decision.application_id,
        "decision_id": decision.id, "channel": channel, "recipient": header_safe(recipient, 254),
        "recipient_name": header_safe(recipient_name), "template": DECISION_TEMPLATE, "language": language,
        "subject": header_safe(subject, 300), "sender": sender, "reply_to": reply_to, "private_link": private_link, "body_text": body_text,
        "body_html": body_html, "message_id_header": message_id_header, "status": status,
        "attempts": 0, "next_attempt_at": now if status == "queued" else None, "lease_token": None, "lease_expires_at": None,
        "last_error": problem, "provider_id": None, "sent_at": None, "created_at": now, "updated_at": now,
    }


def queue_staff_email(scope: InstitutionScope, recipient: str, template: str, language: str | None,
                      context: dict) -> Message:
    """Write one email to a staff member (an invitation, a reset), rendered from
    `templates/staff_messages/<template>.*`, in the current session; the worker sends it after the commit."""
    language = supported_language(language) or DEFAULT_LANGUAGE
    email = render_email(template, language, {**context, "link": LINK_SLOT, "language": language},
                         folder="staff_messages")
    sender_domain = address_of(settings().MAIL_DEFAULT_SENDER).rpartition("@")[2] or "karibu.localhost"
    now = runtime.clock.now()
    message_id = new_id("msg")
    message = Message(
        id=message_id, institution_id=scope.institution_id, channel="email", recipient=header_safe(recipient, 254),
        template=template, language=language, subject=header_safe(email.subject, 300),
        private_link=seal(context["link"]), body_text=email.text,
        body_html=email.html, message_id_header=f"<{message_id}@{sender_domain}>", status="queued", attempts=0,
        next_attempt_at=now, created_at=now, updated_at=now)
    db.session.add(message)
    drain_signal.after_commit()
    return message
