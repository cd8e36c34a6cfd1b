"""Text normalisation for case- and accent-insensitive search."""
from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Lower-case and strip accents: `Nyiramasuhuko Aimée` -> `nyiramasuhuko aimee`."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def applicant_search_text(first_name: str, last_name: str, email: str) -> str:
    return fold(f"{first_name} {last_name} {email}")
