"""Recipient checks and header-safe text: nothing an applicant typed can add or split a mail header."""
from __future__ import annotations

import re
from email.errors import HeaderParseError
from email.headerregistry import Address
from email.utils import parseaddr

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
    """`"Name" <address>` with the name made header-safe and quoted when needed, readable as it is (the email
    package RFC 2047-encodes a non-ASCII name when it writes the header). ValueError for a malformed address."""
    try:
        return str(Address(display_name=header_safe(name), addr_spec=address))
    except HeaderParseError as error:
        raise ValueError(f"not a valid address: {error}") from None


def domain_of(address: str) -> str:
    """The domain of an address, lower case, without a trailing dot."""
    return address.rpartition("@")[2].lower().rstrip(".")


def on_domains(address: str, domains: str) -> bool:
    """Whether `address` is on one of the comma-separated `domains`: the exact domain, without regard to case
    (`ur.ac.rw` allows `a@UR.ac.rw`, not `a@evil-ur.ac.rw` nor `a@mail.ur.ac.rw`)."""
    allowed = {domain.strip().lstrip("@").lower().rstrip(".") for domain in domains.split(",")}
    return domain_of(address) in allowed - {""}


def address_of(mailbox_text: str) -> str:
    """The bare address of a mailbox such as `Karibu <no-reply@example.org>`."""
    return parseaddr(mailbox_text)[1]
