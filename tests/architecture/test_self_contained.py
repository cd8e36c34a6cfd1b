"""Guard: the repository stands alone. No tracked file (code, comment, doc, script, template) sends a reader to a
document outside it: the decisions a user needs are written in README.md and docs/ (docs/contract.md,
docs/cli.md), so a clone holds everything it cites.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A sibling folder of the checkout, or the specification and design documents that lived there.
OUTSIDE = re.compile(r"\.\./shared\b|\b" + "design" + r"\.md\b|\b" + "spec" + r"\.md\b")
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()


def _tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listed.decode("utf-8").split("\0") if name and name != THIS_FILE]


def references_outside(root: Path, names: list[str]) -> list[str]:
    """`path:line: text` for every line of the named files that cites a document outside the repository."""
    found = []
    for name in names:
        path = root / name
        if not path.is_file():
            continue  # deleted in the working tree, not yet committed
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images, fonts
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                found.append(f"{name}:{number}: {line.strip()[:160]}")
    return found


def test_no_file_sends_a_reader_outside_the_repository():
    offenders = references_outside(ROOT, _tracked_files())
    assert offenders == [], ("write what the reader needs in docs/ (docs/contract.md, docs/cli.md, a guide) "
                             "and point there:\n" + "\n".join(offenders))


@pytest.mark.parametrize("name, line", [
    ("README.md", "The behaviour is specified in `../shared/spec.md`."),
    ("docs/api.md", "Decisions where the specification is silent: design.md §5."),
    ("cli/admin.py", '"""Operator commands (design.md §3)."""'),
    ("core/applications/records.py", "# the shape of spec.md's application record"),
    ("templates/base.html", "<!-- see ../shared/ for the design -->"),
    ("scripts/run.sh", "# as ../shared says"),
])
def test_a_reference_outside_is_reported(tmp_path, name, line):
    """The guard bites: a copy of a tracked file with one outside reference appended is reported, at that line."""
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / name, tmp_path / name)
    assert references_outside(tmp_path, [name]) == []
    with open(tmp_path / name, "a", encoding="utf-8") as copy:
        copy.write("\n" + line + "\n")
    reported = references_outside(tmp_path, [name])
    last = len((tmp_path / name).read_text(encoding="utf-8").splitlines())
    assert reported == [f"{name}:{last}: {line}"], reported
