"""DKIM signatures (dkimpy) on every email the platform sends, when MAIL_DKIM_DOMAIN, MAIL_DKIM_SELECTOR and
MAIL_DKIM_PRIVATE_KEY_FILE are all set."""
from __future__ import annotations

from dataclasses import dataclass

import dkim
from dkim.crypto import UnparsableKeyError, parse_pem_private_key

from core.config import ConfigurationError, Settings

DKIM_SETTINGS = ("MAIL_DKIM_DOMAIN", "MAIL_DKIM_SELECTOR", "MAIL_DKIM_PRIVATE_KEY_FILE")
# Every header the email package writes that a receiver shows or interprets. Reply-To is always listed: when
# the message has none, the signature says so, and one added on the way breaks it.
SIGNED_HEADERS = (b"from", b"reply-to", b"to", b"subject", b"date", b"message-id", b"mime-version",
                  b"content-type", b"auto-submitted")
CANONICALIZATION = (b"relaxed", b"relaxed")


class DkimKeyError(ConfigurationError):
    """DKIM is configured but cannot sign: the message names the setting to correct."""


@dataclass(frozen=True)
class DkimSigner:
    domain: str
    selector: str
    private_key: bytes  # the PEM file's bytes, checked to hold an RSA private key

    def sign(self, message: bytes) -> bytes:
        """`message` (CRLF line endings) with a DKIM-Signature header in front."""
        signature = dkim.sign(message, self.selector.encode("ascii"), self.domain.encode("ascii"),
                              self.private_key, canonicalize=CANONICALIZATION, include_headers=list(SIGNED_HEADERS))
        return signature + message


def dkim_signer(config: Settings) -> DkimSigner | None:
    """The signer the settings describe, or None when none of the three is set; DkimKeyError when only some are,
    or the key file is missing, unreadable or not a PEM RSA private key."""
    values = {name: getattr(config, name).strip() for name in DKIM_SETTINGS}
    missing = [name for name, value in values.items() if not value]
    if len(missing) == len(DKIM_SETTINGS):
        return None
    if missing:
        raise DkimKeyError(f"DKIM is half configured: {' and '.join(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} empty. Set all of {', '.join(DKIM_SETTINGS)} "
                           "to sign emails, or none of them.")
    domain, selector, path = values["MAIL_DKIM_DOMAIN"], values["MAIL_DKIM_SELECTOR"], \
        values["MAIL_DKIM_PRIVATE_KEY_FILE"]
    if not (domain.isascii() and selector.isascii()):
        raise DkimKeyError("MAIL_DKIM_DOMAIN and MAIL_DKIM_SELECTOR must be ASCII (an IDN domain in its xn-- form).")
    try:
        with open(path, "rb") as key_file:
            key = key_file.read()
    except OSError as error:
        raise DkimKeyError(f"MAIL_DKIM_PRIVATE_KEY_FILE {path} cannot be read: {error.strerror or error}.") from None
    try:
        parse_pem_private_key(key)
    except (UnparsableKeyError, ValueError) as error:
        raise DkimKeyError(f"MAIL_DKIM_PRIVATE_KEY_FILE {path} is not a PEM RSA private key "
                           f"({' '.join(str(error).split())[:200]}).") from None
    return DkimSigner(domain=domain, selector=selector, private_key=key)
