"""The catalogues are complete: every string the code marks for translation has a French and a Swahili
translation (the staff portal is offered in both), with the same placeholders as the English text.

The strings are extracted from the source with the project's `babel.cfg`, as `pybabel extract` does, so a
string added to a template without its translation fails here rather than showing English to French staff.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
KEYWORDS = {"_": None, "_l": None, "gettext": None, "ngettext": (1, 2), "lazy_gettext": None,
            "lazy_ngettext": (1, 2), "pgettext": ((1, "c"), 2), "lazy_pgettext": ((1, "c"), 2)}
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\w*\}")


def _extracted() -> dict[tuple[str | None, str], set[str]]:
    """(context, msgid) → the files it comes from."""
    with (ROOT / "babel.cfg").open() as handle:
        method_map, options_map = parse_mapping_cfg(handle)
    found: dict[str, set[str]] = {}
    for filename, _line, message, _comments, context in extract_from_dir(
            str(ROOT), method_map, options_map, keywords=KEYWORDS):
        msgid = message[0] if isinstance(message, tuple) else message  # a plural is filed under its singular
        if msgid:
            found.setdefault((context, msgid), set()).add(filename.replace("\\", "/"))
    return found


def _catalogue(language: str):
    with (ROOT / "translations" / language / "LC_MESSAGES" / "messages.po").open("rb") as handle:
        return read_po(handle, locale=language)


EXTRACTED = _extracted()


def test_extraction_finds_the_staff_portal_strings():
    files = {name for names in EXTRACTED.values() for name in names}
    assert any(name.startswith("templates/applicants/") for name in files), sorted(files)[:20]
    assert any(name.startswith("portal/") and name != "portal/public/views.py" for name in files)


@pytest.mark.parametrize("language", ["fr", "sw"])
def test_every_marked_string_is_translated(language):
    catalogue = _catalogue(language)
    missing = []
    for (context, msgid), files in sorted(EXTRACTED.items(), key=lambda item: (item[0][1], item[0][0] or "")):
        message = catalogue.get(msgid, context=context)
        strings = message.string if message is not None else None
        translated = all(strings) if isinstance(strings, tuple) else bool(strings)
        if message is None or message.fuzzy or not translated:
            where = f" in context {context!r}" if context else ""
            missing.append(f"{msgid!r}{where} ({', '.join(sorted(files))})")
    assert not missing, f"{len(missing)} strings lack a {language} translation:\n" + "\n".join(missing[:50])


@pytest.mark.parametrize("language", ["fr", "sw"])
def test_translations_keep_the_placeholders(language):
    wrong = []
    for message in _catalogue(language):
        if not message.id or not message.string:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        expected = set(PLACEHOLDER.findall(ids[-1]))
        for string in strings:
            if string and set(PLACEHOLDER.findall(string)) - expected:
                wrong.append(f"{ids[0]!r} → {string!r}")
            if string and len(strings) == 1 and set(PLACEHOLDER.findall(string)) != expected:
                wrong.append(f"{ids[0]!r} → {string!r}")
    assert not wrong, "\n".join(wrong)
