"""Guard: the files of `migrations/versions/` are one linear chain, in file-name order, each named after its
revision id and described truthfully by its docstring (see migrations/README.md).

File `NNN_<revision id>.py`: NNN is the revision's position in the chain (001, 002, … with no gap), so listing
the folder shows the order `flask db upgrade` applies them in, and the name says which revision id a database's
`alembic_version` holds for it. The checker reads the files (no database, no Alembic); a last test checks that
Alembic sees the same chain.
"""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
FILE_NAME = re.compile(r"(?P<position>\d{3})_(?P<revision>.+)\.py")
DOCSTRING_LINE = re.compile(r"^(Revision ID|Revises):[ \t]*(.*?)[ \t]*$", re.MULTILINE)


def _revision_of(path: Path) -> dict:
    """`revision`, `down_revision` and the docstring's `Revision ID:`/`Revises:` lines of one file."""
    module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = {"file": path.name, "docstring": ast.get_docstring(module, clean=False) or ""}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("revision", "down_revision"):
            value = ast.literal_eval(node.value)
            found[node.targets[0].id] = tuple(value) if isinstance(value, list) else value
    return found


def _chain_positions(revisions: list[dict]) -> dict[str, int]:
    """Position (1, 2, …) of each revision reached by walking from the base along `down_revision`, as long as
    the walk is linear (one base, one revision on each)."""
    children: dict[object, list[str]] = {}
    for found in revisions:
        children.setdefault(found.get("down_revision"), []).append(found.get("revision"))
    positions: dict[str, int] = {}
    following = children.get(None, [])
    while len(following) == 1 and isinstance(following[0], str) and following[0] not in positions:
        positions[following[0]] = len(positions) + 1
        following = children.get(following[0], [])
    return positions


def chain_problems(versions: Path) -> list[str]:
    """Every way the folder `versions` departs from one linear chain in file-name order (empty: none)."""
    files = sorted(path for path in versions.glob("*.py") if path.name != "__init__.py")
    if not files:
        return [f"no migration in {versions}"]
    problems: list[str] = []
    revisions = [_revision_of(path) for path in files]
    positions = _chain_positions(revisions)

    for found in revisions:
        name, revision, down = found["file"], found.get("revision"), found.get("down_revision", "<missing>")
        if not isinstance(revision, str):
            problems.append(f"{name}: `revision` must be a string, found {revision!r}")
            continue
        if down != "<missing>" and down is not None and not isinstance(down, str):
            problems.append(f"{name}: `down_revision` {down!r} merges several revisions (the chain is linear)")
        match = FILE_NAME.fullmatch(name)
        if not match or match["revision"] != revision:
            why = "is not named <3-digit position>_<revision id>.py" if not match else "does not carry its revision id"
            position = f"{positions[revision]:03d}" if revision in positions else "NNN"
            problems.append(f"{name}: {why}: it should be named {position}_{revision}.py")
        elif revision in positions and int(match["position"]) != positions[revision]:
            problems.append(f"{name}: is at position {positions[revision]} of the chain: it should be named "
                            f"{positions[revision]:03d}_{revision}.py")
        lines: dict[str, list[str]] = {}
        for label, value in DOCSTRING_LINE.findall(found["docstring"]):
            lines.setdefault(label, []).append(value)
        for label, actual in (("Revision ID", revision), ("Revises", down)):
            written = lines.get(label, [])
            wanted = "" if actual is None else actual if isinstance(actual, str) else ", ".join(actual)
            if written != [wanted]:
                said = " and ".join(map(repr, written)) or "nothing"
                problems.append(f"{name}: the docstring's {label} is {said}, the code says {wanted!r}")

    for previous, found in zip([None, *revisions], revisions):
        expected_down = None if previous is None else previous.get("revision")
        if found.get("down_revision", "<missing>") != expected_down:
            problems.append(f"{found['file']}: down_revision is {found.get('down_revision', '<missing>')!r}, "
                            f"the previous file's revision is {expected_down!r}")

    known = [found.get("revision") for found in revisions]
    for revision in sorted({r for r in known if known.count(r) > 1}, key=str):
        problems.append(f"revision {revision!r} is declared by more than one file")
    children: dict[object, list[str]] = {}
    for found in revisions:
        down = found.get("down_revision")
        for parent in (down if isinstance(down, (tuple, list)) else (down,)):
            children.setdefault(parent, []).append(found["file"])
            if parent is not None and parent not in known:
                problems.append(f"{found['file']}: down_revision {parent!r} is no revision of this folder")
    for parent, files_on_it in children.items():
        if len(files_on_it) > 1:
            what = "several bases" if parent is None else f"a branch at {parent!r}"
            problems.append(f"{what}: {', '.join(files_on_it)} all revise it")
    heads = [r for r in known if r not in children]
    if len(heads) != 1:
        problems.append(f"{len(heads)} heads ({', '.join(map(str, heads))}), the chain must have exactly one")
    return problems


def test_the_migrations_are_one_chain_in_file_name_order_with_true_docstrings():
    problems = chain_problems(MIGRATIONS / "versions")
    assert problems == [], "see migrations/README.md:\n" + "\n".join(problems)


def test_alembic_reads_the_same_chain_in_the_same_order():
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(MIGRATIONS))
    alembic_order = [revision.revision for revision in reversed(list(script.walk_revisions()))]
    file_order = [_revision_of(path)["revision"] for path in sorted((MIGRATIONS / "versions").glob("*.py"))]
    assert script.get_heads() == [file_order[-1]]
    assert alembic_order == file_order


# The checker on broken copies of the folder: each mutation must be reported.

def _copy(tmp_path: Path) -> Path:
    versions = tmp_path / "versions"
    shutil.copytree(MIGRATIONS / "versions", versions, ignore=shutil.ignore_patterns("__pycache__"))
    return versions


def _file(versions: Path, revision: str) -> Path:
    (path,) = versions.glob(f"*_{revision}.py")
    return path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path.name, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _swap_down_revisions(versions: Path) -> None:
    """0015 and 0017 exchange places in the chain by their down_revision, files and docstrings unchanged."""
    _edit(_file(versions, "0015_time_zone_language"), 'down_revision = "0016_webhook_portal"',
          'down_revision = "0017_application_history"')
    _edit(_file(versions, "0017_application_history"), 'down_revision = "0015_time_zone_language"',
          'down_revision = "0016_webhook_portal"')
    _edit(_file(versions, "0014_saved_views"), 'down_revision = "0017_application_history"',
          'down_revision = "0015_time_zone_language"')


def _wrong_docstring(versions: Path) -> None:
    _edit(_file(versions, "0016_webhook_portal"), "Revises: 0013_two_factor", "Revises: 0011_privacy")


def _wrong_docstring_revision_id(versions: Path) -> None:
    _edit(_file(versions, "0018_erased_applicants"), "Revision ID: 0018_erased_applicants",
          "Revision ID: 0018_erased_applicants_index")


def _files_out_of_order(versions: Path) -> None:
    first, second = _file(versions, "0016_webhook_portal"), _file(versions, "0015_time_zone_language")
    first.rename(versions / "014_0016_webhook_portal.py")
    second.rename(versions / "013_0015_time_zone_language.py")


def _name_without_its_id(versions: Path) -> None:
    _file(versions, "0018_erased_applicants").rename(versions / "017_0018_erased_applicants_index.py")


def _gap_in_positions(versions: Path) -> None:
    _file(versions, "0018_erased_applicants").rename(versions / "018_0018_erased_applicants.py")


def _add_revision(versions: Path, revision: str, down_revision: str | tuple) -> None:
    """A well-formed new file at the end of the folder (next position, true docstring)."""
    position = len(list(versions.glob("*.py"))) + 1
    revises = down_revision if isinstance(down_revision, str) else ", ".join(down_revision)
    (versions / f"{position:03d}_{revision}.py").write_text(
        f'"""A new revision.\n\nRevision ID: {revision}\nRevises: {revises}\n"""\n'
        f"revision = {revision!r}\ndown_revision = {down_revision!r}\n", encoding="utf-8")


def _chain(versions: Path) -> list[str]:
    return [_revision_of(path)["revision"] for path in sorted(versions.glob("*.py"))]


def _second_head(versions: Path) -> None:
    """A new revision written on an older head (the one before the last): a branch, two heads."""
    _add_revision(versions, "9999_second_head", _chain(versions)[-2])


def _merge_revision(versions: Path) -> None:
    _add_revision(versions, "9999_merge", tuple(_chain(versions)[-2:]))


def _unknown_down_revision(versions: Path) -> None:
    _edit(_file(versions, "0004_verification"), 'down_revision = "0002_read_side"', 'down_revision = "0003_missing"')
    _edit(_file(versions, "0004_verification"), "Revises: 0002_read_side", "Revises: 0003_missing")


def _changed_revision_id(versions: Path) -> None:
    """The id renamed in the code only: the file name and the next file's down_revision still say the old one."""
    _edit(_file(versions, "0006_portal"), 'revision = "0006_portal"', 'revision = "0006_credential_checks"')


BROKEN = {
    "swapped down_revision": (_swap_down_revisions, "down_revision is '0017_application_history', the previous "
                                                    "file's revision is '0016_webhook_portal'"),
    "docstring Revises wrong": (_wrong_docstring, "013_0016_webhook_portal.py: the docstring's Revises is "
                                                  "'0011_privacy', the code says '0013_two_factor'"),
    "docstring Revision ID wrong": (_wrong_docstring_revision_id, "the docstring's Revision ID is "
                                                                "'0018_erased_applicants_index'"),
    "files out of order": (_files_out_of_order, "013_0015_time_zone_language.py: is at position 14 of the chain: "
                                                "it should be named 014_0015_time_zone_language.py"),
    "name without its id": (_name_without_its_id, "017_0018_erased_applicants_index.py: does not carry its "
                                                  "revision id: it should be named 017_0018_erased_applicants.py"),
    "gap in positions": (_gap_in_positions, "018_0018_erased_applicants.py: is at position 17 of the chain"),
    "second head": (_second_head, "9999_second_head), the chain must have exactly one"),
    "merge revision": (_merge_revision, "merges several revisions"),
    "unknown down_revision": (_unknown_down_revision, "down_revision '0003_missing' is no revision of this folder"),
    "revision id changed in the code": (_changed_revision_id, "005_0006_portal.py: does not carry its revision id"),
}


@pytest.mark.parametrize("break_it, reported", BROKEN.values(), ids=BROKEN.keys())
def test_the_checker_reports_a_broken_copy_of_the_folder(tmp_path, break_it, reported):
    versions = _copy(tmp_path)
    assert chain_problems(versions) == []  # the copy itself is sound
    break_it(versions)
    problems = chain_problems(versions)
    assert any(reported in problem for problem in problems), "\n".join(problems)


def test_the_checker_accepts_a_revision_added_as_migrations_readme_says(tmp_path):
    versions = _copy(tmp_path)
    head = _chain(versions)[-1]
    _add_revision(versions, "0019_next_topic", head)
    assert chain_problems(versions) == []
    assert (versions / f"{len(_chain(versions)):03d}_0019_next_topic.py").exists()
