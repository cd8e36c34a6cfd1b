"""Recipient checks and header-safe text: nothing an applicant typed can add or split a mail header."""
from __future__ import annotations

import re
from email.utils import formataddr, parseaddr

# One address, no display name, no spaces, no control characters (CR/LF included), one @, a dotted domain.
_ATOM = r"[^@\s\x00-\x1f\x7f<>(),;:\"\[\]\\]+"
_EMAIL = re.compile(rf"^{_ATOM}@{_ATOM}\.{_ATOM}$")
_INTERNATIONAL_PHONE = re.compile(r"^\+[1-9][0-9]{6,14}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def header_safe(text: str | None, limit: int = 200) -> str:
    """`text` on one line: every run of control characters (CR, LF, tab, NUL…) becomes one space."""
    return " ".join(_CONTROL.sub(" ", text or "").split())[:limit]


def valid_email(address: str | None) -> bool:
    return bool(address) and len(address) <= 254 and _EMAIL.match(address) is not None


def valid_international_phone(number: str | None) -> bool:
    return bool(number) and _INTERNATIONAL_PHONE.match(number) is not None


def mailbox(name: str | None, address: str) -> str:
    """`"Name" <address>` with the name made header-safe (RFC 2047-encoded by the email package if needed)."""
    return formataddr((header_safe(name), address))


def address_of(mailbox_text: str) -> str:
    """The bare address of a mailbox such as `Karibu <no-reply@example.org>`."""
    return parseaddr(mailbox_text)[1]
