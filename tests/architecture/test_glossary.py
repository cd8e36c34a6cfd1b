"""One term per idea per language: every catalogue entry whose English names an idea of translations/glossary.toml
uses that idea's French and Swahili term, and none of the words the glossary sets aside (French "session" for
an admission cycle, "deux facteurs" for two-step sign-in)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = tomllib.loads((ROOT / "translations" / "glossary.toml").read_text(encoding="utf-8"))["idea"]
LANGUAGES = ("fr", "sw")
# Not words of the text: placeholders (`%(cycle)s`), markup and names of code (`applicant.json`, `application.*`).
NOT_WORDS = re.compile(r"%\(\w+\)[sd]|<[^>]+>|\b\w+\.[\w*]+")


def _entries(language: str) -> list[tuple[str, str]]:
    """(English, translation) of every translated entry; a plural's forms are each paired with its plural."""
    with (ROOT / "translations" / language / "LC_MESSAGES" / "messages.po").open("rb") as handle:
        catalogue = read_po(handle, locale=language)
    pairs = []
    for message in catalogue:
        if not message.id or not message.string:
            continue
        english = " ".join(message.id) if isinstance(message.id, tuple) else message.id
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        pairs += [(english, string) for string in strings if string]
    return pairs


def drift(glossary: list[dict], language: str, entries: list[tuple[str, str]]) -> list[str]:
    """Each entry naming an idea whose translation lacks the idea's term or uses a word set aside."""
    found = []
    for idea in glossary:
        named = re.compile(idea["en"], re.I)
        for english, translated in entries:
            if not named.search(NOT_WORDS.sub(" ", english)):
                continue
            text = translated.lower()
            if not any(term.lower() in text for term in idea[language]):
                found.append(f"{idea['name']}: {english!r} → {translated!r} (not {' / '.join(idea[language])})")
            for avoided in idea[f"{language}_avoid"]:
                if re.search(rf"\b{re.escape(avoided.lower())}", text):
                    found.append(f"{idea['name']}: {english!r} → {translated!r} uses {avoided!r}")
    return found


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_idea_has_one_term_in_the_catalogue(language):
    found = drift(GLOSSARY, language, _entries(language))
    assert not found, f"{len(found)} entries drift from the glossary:\n" + "\n".join(found)


def test_the_glossary_check_finds_a_drifting_term():
    entries = [("All cycles", "Toutes les sessions"), ("Two-factor sign-in", "Connexion à deux facteurs"),
               ("Cycle dates", "Dates du cycle")]
    found = "\n".join(drift(GLOSSARY, "fr", entries))
    assert "'All cycles'" in found and "uses 'session'" in found and "uses 'facteur'" in found
    assert "'Cycle dates'" not in found


def test_every_idea_names_a_term_in_each_language():
    for idea in GLOSSARY:
        assert re.compile(idea["en"]) and all(idea[language] for language in LANGUAGES), idea["name"]
