"""The outbox engine (core/outbox) is written once for every kind of outbox: it knows none of them, and no RQ."""
import ast
from pathlib import Path

OUTBOX = Path(__file__).resolve().parents[2] / "core" / "outbox"
FORBIDDEN = ("core.webhooks", "core.messages", "rq", "jobs", "flask", "api", "portal")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_outbox_engine_imports_no_kind_of_outbox_and_no_worker():
    modules = sorted(OUTBOX.glob("*.py"))
    assert {path.name for path in modules} >= {"__init__.py", "schedule.py", "leases.py", "drain.py"}
    found = {path.name: sorted(name for name in imported_modules(path)
                               if any(name == f or name.startswith(f + ".") for f in FORBIDDEN))
             for path in modules}
    assert found == {path.name: [] for path in modules}
