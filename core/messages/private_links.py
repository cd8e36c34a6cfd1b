"""Personal links of messages, kept encrypted in `messages.private_link` until sent and put in place of LINK_SLOT
only in memory, just before sending."""
from __future__ import annotations

from markupsafe import escape

from core.secret_key import decrypted_or_none, derived_fernet, key_ring

LINK_SLOT = "{personal-link}"
SHOWN_INSTEAD = "(personal link, hidden)"
# The HKDF label of the links' key: theirs alone, so no other ciphertext of SECRET_KEY's opens as a link.
PRIVATE_LINK_LABEL = b"karibu.message-private-link.v1"


class LinkUnreadable(Exception):
    """The stored link was encrypted under a key no longer in the key ring (or altered)."""


def _box():
    return derived_fernet(key_ring(), PRIVATE_LINK_LABEL)


def seal(link: str | None) -> str | None:
    return _box().encrypt(link.encode("utf-8")).decode("ascii") if link else None


def unseal(sealed: str | None) -> str | None:
    if sealed is None:
        return None
    link = decrypted_or_none(_box(), sealed.encode("ascii"))
    if link is None:
        raise LinkUnreadable("The personal link of this message cannot be decrypted (was SECRET_KEY changed without keeping the old key in SECRET_KEY_FALLBACKS?)")
    return link.decode("utf-8")


def with_link(text: str | None, link: str | None, html: bool = False) -> str | None:
    """`text` with its link slot filled in (for sending only; never stored)."""
    if text is None or link is None:
        return text
    return text.replace(LINK_SLOT, str(escape(link)) if html else link)


def shown(text: str | None, shown_instead: str = SHOWN_INSTEAD) -> str:
    """`text` as staff may read it: the link slot named (by `shown_instead`, in the reader's language), not
    filled."""
    return (text or "").replace(LINK_SLOT, shown_instead)
