"""Sending one message, email over SMTP or SMS over Africa's Talking, as an `Outcome`: sent, a temporary or
permanent failure, or the transport down."""
from __future__ import annotations

import smtplib
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate

import dkim
import requests

from core.config import Settings
from core.messages.addresses import address_of, mailbox, valid_email
from core.messages.signing import DkimSigner

AFRICASTALKING_LIVE_URL = "https://api.africastalking.com/version1/messaging"
AFRICASTALKING_SANDBOX_URL = "https://api.sandbox.africastalking.com/version1/messaging"
# Africa's Talking per-recipient status codes: accepted, and refusals no retry can change.
SMS_ACCEPTED = {100, 101, 102}  # Processed, Sent, Queued
SMS_PERMANENT = {402, 403, 404, 406, 409}  # InvalidSenderId, InvalidPhoneNumber, UnsupportedNumberType,
#                                            UserInBlacklist, DoNotDisturbRejection
ERROR_LIMIT = 1000


@dataclass(frozen=True)
class Outcome:
    sent: bool
    permanent: bool = False
    error: str | None = None
    provider_id: str | None = None
    transport_down: bool = False  # no answer about this message: the server or gateway is unreachable

    @classmethod
    def temporary(cls, error: str) -> "Outcome":
        return cls(False, False, error[:ERROR_LIMIT])

    @classmethod
    def down(cls, error: str) -> "Outcome":
        return cls(False, False, error[:ERROR_LIMIT], transport_down=True)

    @classmethod
    def refused(cls, error: str) -> "Outcome":
        return cls(False, True, error[:ERROR_LIMIT])


def _smtp_text(code: int, response: bytes | str) -> str:
    text = response.decode("utf-8", "replace") if isinstance(response, bytes) else str(response)
    return f"{code} {' '.join(text.split())}"


def _by_code(code: int, answer: str) -> Outcome:
    """SMTP 421 (the server closes the channel) is the server down; other 5xx permanent, 4xx temporary."""
    if code == 421:
        return Outcome.down(answer)
    return Outcome.refused(answer) if 500 <= code < 600 else Outcome.temporary(answer)


def build_email(*, sender: str, recipient: str, recipient_name: str, subject: str, text: str, html: str | None,
                message_id: str, reply_to: str | None = None) -> EmailMessage:
    """A multipart/alternative email (plain text and HTML) with its own Message-ID; the headers come from
    header-safe values only (the email package also refuses any CR/LF in a header value)."""
    email = EmailMessage()
    email["From"] = sender
    if reply_to:
        email["Reply-To"] = reply_to
    email["To"] = mailbox(recipient_name, recipient)
    email["Subject"] = subject
    email["Date"] = formatdate(usegmt=True)
    email["Message-ID"] = message_id
    email["Auto-Submitted"] = "auto-generated"
    email.set_content(text)
    if html:
        email.add_alternative(html, subtype="html")
    return email


class SmtpTransport:
    """One SMTP connection, opened on first use and kept for the whole drain (closed by `close`); `signer` signs
    every email it sends (None: DKIM off)."""

    def __init__(self, config: Settings, signer: DkimSigner | None = None):
        self.config = config
        self.signer = signer
        self._connection: smtplib.SMTP | None = None

    def _connect(self) -> smtplib.SMTP:
        config = self.config
        if config.MAIL_USE_SSL:
            connection = smtplib.SMTP_SSL(config.MAIL_SERVER, config.MAIL_PORT, timeout=config.MAIL_TIMEOUT,
                                          context=ssl.create_default_context())
        else:
            connection = smtplib.SMTP(config.MAIL_SERVER, config.MAIL_PORT, timeout=config.MAIL_TIMEOUT)
        try:
            connection.ehlo()
            if config.MAIL_USE_TLS and not config.MAIL_USE_SSL:
                connection.starttls(context=ssl.create_default_context())
                connection.ehlo()
            if config.MAIL_USERNAME:
                connection.login(config.MAIL_USERNAME, config.MAIL_PASSWORD)
        except BaseException:
            connection.close()
            raise
        return connection

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.quit()
            except (smtplib.SMTPException, OSError):
                self._connection.close()
            self._connection = None

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def send(self, *, recipient: str, recipient_name: str, subject: str, text: str, html: str | None,
             message_id: str, sender: str | None = None, reply_to: str | None = None,
             signer: DkimSigner | None = None, before_data: Callable[[], None] | None = None) -> Outcome:
        """Send one email From `sender` (None: MAIL_DEFAULT_SENDER) with `reply_to` (None: none), DKIM-signed by
        `signer` (None: the connection's own); `before_data` is called just before DATA, and what it raises goes
        up (the connection is dropped)."""
        if not self.config.MAIL_SERVER:
            return Outcome.down("Email is not configured: MAIL_SERVER is empty.")
        if not valid_email(recipient):
            return Outcome.refused("Not a valid email address; nothing was sent.")
        envelope_sender = address_of(self.config.MAIL_DEFAULT_SENDER)
        # Non-ASCII addresses need SMTPUTF8 and UTF-8 headers; anything else goes as plain ASCII.
        international = not all(address.isascii() for address in (envelope_sender, recipient, reply_to or ""))
        try:
            email = build_email(sender=sender or self.config.MAIL_DEFAULT_SENDER, recipient=recipient,
                                recipient_name=recipient_name, subject=subject, text=text, html=html,
                                message_id=message_id, reply_to=reply_to)
            data = email.as_bytes(policy=email.policy.clone(linesep="\r\n", utf8=international))
        except ValueError as error:  # a header the email package refuses to write
            return Outcome.refused(f"Could not build the email: {error}")
        signer = signer or self.signer
        if signer is not None:
            try:
                data = signer.sign(data)
            except dkim.DKIMException as error:
                return Outcome.refused(f"Could not sign the email (DKIM): {error}")
        try:
            if self._connection is None:
                self._connection = self._connect()
            return self._transaction(self._connection, envelope_sender, recipient, data, international,
                                     before_data)
        except smtplib.SMTPNotSupportedError as error:  # about this message (SMTPUTF8), not the server
            return Outcome.temporary(f"SMTP server cannot send this email: {error}")
        except smtplib.SMTPAuthenticationError as error:
            self._drop()
            return Outcome.down(f"SMTP sign-in refused: {_smtp_text(error.smtp_code, error.smtp_error)}")
        except smtplib.SMTPResponseException as error:
            self._drop()  # e.g. 421 on connect: the server is closing the channel
            return _by_code(error.smtp_code, _smtp_text(error.smtp_code, error.smtp_error))
        except (smtplib.SMTPException, OSError, ssl.SSLError) as error:
            self._drop()
            kind = "timed out" if isinstance(error, (socket.timeout, TimeoutError)) else "failed"
            return Outcome.down(f"SMTP connection to {self.config.MAIL_SERVER}:{self.config.MAIL_PORT} "
                                     f"{kind}: {error.__class__.__name__}: {error}")

    def _transaction(self, connection: smtplib.SMTP, sender: str, recipient: str, data: bytes,
                     international: bool, before_data: Callable[[], None] | None) -> Outcome:
        """MAIL, RCPT, DATA one by one with `data` unchanged: an Outcome keeping a refusal's code, or the final
        answer (the server's queue id) as provider id; SMTPNotSupportedError when SMTPUTF8 is not offered."""
        options = ("SMTPUTF8", "BODY=8BITMIME") if international else ()
        steps = ((lambda: connection.mail(sender, options), (250,)),
                 (lambda: connection.rcpt(recipient), (250, 251)),
                 (lambda: connection.data(data), (250,)))
        for number, (step, accepted) in enumerate(steps):
            if number == 2 and before_data is not None:
                try:
                    before_data()
                except BaseException:
                    self._drop()
                    raise
            code, answer = step()
            if code not in accepted:
                outcome = _by_code(code, _smtp_text(code, answer))
                if code == 421:
                    self._drop()
                else:
                    try:
                        connection.rset()
                    except (smtplib.SMTPException, OSError):
                        self._drop()
                return outcome
        return Outcome(True, provider_id=_smtp_text(code, answer)[:255])


class AfricasTalkingTransport:
    """Africa's Talking bulk SMS API: a form POST to /version1/messaging with the `apiKey` header."""

    def __init__(self, config: Settings, session: requests.Session | None = None):
        self.config = config
        self.session = session or requests.Session()

    @property
    def url(self) -> str:
        if self.config.AFRICASTALKING_API_URL:
            return self.config.AFRICASTALKING_API_URL
        if self.config.AFRICASTALKING_USERNAME == "sandbox":
            return AFRICASTALKING_SANDBOX_URL
        return AFRICASTALKING_LIVE_URL

    def close(self) -> None:
        self.session.close()

    def send(self, *, recipient: str, text: str, **_unused) -> Outcome:
        config = self.config
        if config.SMS_PROVIDER.strip().lower() != "africastalking":
            return Outcome.down("SMS is not configured: SMS_PROVIDER is not africastalking.")
        form = {"username": config.AFRICASTALKING_USERNAME, "to": recipient, "message": text}
        if config.SMS_SENDER_ID:
            form["from"] = config.SMS_SENDER_ID
        try:
            response = self.session.post(self.url, data=form, timeout=(5, config.MAIL_TIMEOUT),
                                         headers={"apiKey": config.AFRICASTALKING_API_KEY,
                                                  "Accept": "application/json"}, allow_redirects=False)
        except requests.RequestException as error:
            return Outcome.down(f"SMS gateway unreachable: {error.__class__.__name__}: {error}")
        excerpt = " ".join(response.text[:300].split())
        if response.status_code >= 500 or response.status_code in (401, 403, 429):
            return Outcome.down(f"SMS gateway answered HTTP {response.status_code}: {excerpt}")
        if response.status_code >= 300:
            return Outcome.refused(f"SMS gateway answered HTTP {response.status_code}: {excerpt}")
        try:
            [result] = response.json()["SMSMessageData"]["Recipients"]
            code, status = int(result["statusCode"]), str(result.get("status", ""))
        except (ValueError, KeyError, TypeError):
            return Outcome.temporary(f"SMS gateway gave an unexpected answer: {excerpt}")
        if code in SMS_ACCEPTED:
            return Outcome(True, provider_id=str(result.get("messageId") or "")[:255] or None)
        answer = f"{code} {status}".strip()
        return Outcome.refused(answer) if code in SMS_PERMANENT else Outcome.temporary(answer)
