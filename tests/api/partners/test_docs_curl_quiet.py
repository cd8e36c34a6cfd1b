"""A curl whose output a reader's shell captures (`$(curl …)`), pipes or writes to a file prints curl's progress
meter on the terminal unless it runs with `-sS` (quiet, errors still shown): every such example in README.md and
docs/*.md says `-sS`."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell|console)\n(.*?)^```", re.S | re.M)
CURL = re.compile(r"(\$\()?\bcurl\b")


def _command_lines(text: str):
    """Each shell command of the document's shell blocks, continuation lines joined."""
    for block in SHELL_BLOCK.findall(text):
        yield from re.sub(r"\\\n\s*", " ", block).splitlines()


def _noisy_curls(line: str) -> list[str]:
    """The curl invocations of `line` that are captured, piped or write a file without `-sS`."""
    noisy = []
    for match in CURL.finditer(line):
        arguments = line[match.end():]
        captured = bool(match.group(1))
        if captured or re.search(r"(^|\s)(-o|--output)\s|\s\|\s", arguments):
            if not re.match(r"\s+-sS\b", arguments):
                noisy.append(line[match.start():match.start() + 90])
    return noisy


def test_captured_curl_examples_are_quiet():
    noisy = [f"{path.name}: {curl}" for path in DOCUMENTS for line in _command_lines(path.read_text("utf-8"))
             for curl in _noisy_curls(line)]
    assert noisy == []


def test_the_check_sees_a_noisy_capture():
    assert _noisy_curls('APP_ID=$(curl -H "x" "$KARIBU_URL/api/v1/applications" | python3 -c "…")')
    assert not _noisy_curls('APP_ID=$(curl -sS -H "x" "$KARIBU_URL/api/v1/applications" | python3 -c "…")')
    assert not _noisy_curls('curl -H "x" "$KARIBU_URL/api/v1/cycles"')
