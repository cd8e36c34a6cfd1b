"""The human reference of an application (`DU-2026-4KX7P`): the institution's initials, the year, and five
Crockford base32 characters, which have no I, L, O or U, so it can be read aloud and typed back."""
from __future__ import annotations

import re
import secrets
import unicodedata
from datetime import datetime

from sqlalchemy import select

from core.db import db
from core.models import Application

CROCKFORD_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
RANDOM_LENGTH = 5
PREFIX_MAX = 4
FALLBACK_PREFIX = "AP"
REFERENCE_PATTERN = re.compile(rf"^[A-Z]{{1,{PREFIX_MAX}}}-[0-9]{{4}}-[{CROCKFORD_ALPHABET}]{{{RANDOM_LENGTH}}}$")
# What a person may type for a letter Crockford leaves out: O reads as zero, I and L as one.
_READ_AS = str.maketrans({"O": "0", "I": "1", "L": "1"})


def institution_prefix(name: str) -> str:
    """The initials of the name's capitalised words, accents dropped (`Université Libre de Kigali` -> `ULK`)."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    initials = "".join(word[0] for word in re.findall(r"[A-Za-z]+", ascii_name) if word[0].isupper())
    return initials[:PREFIX_MAX] or FALLBACK_PREFIX


def candidate_reference(prefix: str, year: int) -> str:
    return f"{prefix}-{year:04d}-" + "".join(secrets.choice(CROCKFORD_ALPHABET) for _ in range(RANDOM_LENGTH))


def new_reference(institution_name: str, submitted_at: datetime) -> str:
    """An unused reference for an application of this institution submitted at `submitted_at` (32^5 per
    institution and year: a draw already taken is drawn again; the unique index refuses a concurrent twin)."""
    prefix = institution_prefix(institution_name)
    while True:
        reference = candidate_reference(prefix, submitted_at.year)
        if db.session.scalar(select(Application.id).where(Application.reference == reference)) is None:
            return reference


def typed_reference(text: str) -> str | None:
    """The reference a person typed (any case, spaces, O for zero, I or L for one), or None if it is not one."""
    parts = text.strip().upper().replace(" ", "").split("-")
    if len(parts) != 3:
        return None
    reference = f"{parts[0]}-{parts[1].translate(_READ_AS)}-{parts[2].translate(_READ_AS)}"
    return reference if REFERENCE_PATTERN.match(reference) else None
