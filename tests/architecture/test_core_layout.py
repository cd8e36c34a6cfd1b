"""Guard: `core/` stays grouped by area (docs/architecture.md, "Inside core/").

The top of `core/` holds the platform modules only, at most 12 of them; every package of `core` says in the
one-line docstring of its `__init__.py` what lives there.
"""
from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
MOST_TOP_LEVEL_MODULES = 12


def test_the_top_of_core_holds_at_most_twelve_modules():
    modules = sorted(path.name for path in CORE.glob("*.py") if path.name != "__init__.py")
    assert len(modules) <= MOST_TOP_LEVEL_MODULES, (
        f"{len(modules)} modules at the top of core/ (at most {MOST_TOP_LEVEL_MODULES}): put the new one in the "
        f"package of its area: {', '.join(modules)}")


def test_every_package_of_core_says_what_lives_there():
    silent = []
    for init in sorted(CORE.rglob("__init__.py")):
        if "__pycache__" in init.parts:
            continue
        docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
        if not docstring.strip():
            silent.append(str(init.relative_to(CORE.parent)))
    assert silent == [], "give these packages a docstring saying what lives there: " + ", ".join(silent)
