"""Languages of the portal and of applicants' pages (English, French, Swahili); compiling `translations/`."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from core.config import PROJECT_ROOT

LANGUAGES = {"en": "English", "fr": "Français", "sw": "Kiswahili"}
# Languages of the staff portal: those whose catalogue covers the staff pages (all three, each in its own name).
STAFF_LANGUAGES = dict(LANGUAGES)
DEFAULT_LANGUAGE = "en"
CATALOGUE_DIR = PROJECT_ROOT / "translations"


def supported_language(value: str | None) -> str | None:
    """The supported language a value names ("fr", "fr-CA", "SW"), or None."""
    if not value or not isinstance(value, str):
        return None
    code = value.strip().replace("_", "-").split("-", 1)[0].lower()
    return code if code in LANGUAGES else None


def compile_catalogues(target: Path, source: Path = CATALOGUE_DIR) -> Path:
    """Compile every `<lang>/LC_MESSAGES/*.po` under `source` into `target` when stale; returns `target`."""
    for po_path in sorted(source.glob("*/LC_MESSAGES/*.po")):
        mo_path = target / po_path.relative_to(source).with_suffix(".mo")
        if mo_path.exists() and mo_path.stat().st_mtime >= po_path.stat().st_mtime:
            continue
        from babel.messages.mofile import write_mo  # the compiler only when a catalogue changed
        from babel.messages.pofile import read_po

        mo_path.parent.mkdir(parents=True, exist_ok=True)
        with po_path.open("rb") as handle:
            catalogue = read_po(handle, locale=po_path.parts[-3])
        # Written aside and renamed, so processes starting together never read a half-written file.
        descriptor, temporary = tempfile.mkstemp(dir=mo_path.parent, suffix=".mo.tmp")
        with os.fdopen(descriptor, "wb") as handle:
            write_mo(handle, catalogue)
        os.replace(temporary, mo_path)
    return target
