"""The layering table of docs/architecture.md, as import-linter contracts (`[tool.importlinter]` in pyproject.toml).

The first test checks the project as it is; the others break a copy of it on purpose, one rule at a time, and
expect the contract to say which rule broke, so a contract that no longer bites fails here too.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "api", "portal", "jobs", "cli", "ops", "devtools")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=directory, capture_output=True, text=True,
                          timeout=120)


def test_the_code_keeps_every_layering_contract():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("module, import_line, broken", [
    ("core/errors.py", "import portal.security", "core is not allowed to import portal"),
    ("core/scoping.py", "import api.errors", "core is not allowed to import api"),
    ("api/errors.py", "import portal.errors", "api is not allowed to import portal"),
    ("portal/errors.py", "import jobs.upkeep", "portal is not allowed to import jobs"),
    ("jobs/upkeep.py", "import api.errors", "jobs is not allowed to import api"),
    ("ops/health.py", "import portal.errors", "ops is not allowed to import portal"),
    ("core/timefmt.py", "import devtools.seed", "core is not allowed to import devtools"),
    ("portal/errors.py", "import devtools.seed", "portal is not allowed to import devtools"),
    ("core/errors.py", "import rq", "core is not allowed to import rq"),
    ("core/errors.py", "import werkzeug.exceptions", "core is not allowed to import werkzeug"),
    ("core/db.py", "from flask_login import LoginManager", "core is not allowed to import flask_login"),
    ("core/db.py", "from flask_wtf import CSRFProtect", "core is not allowed to import flask_wtf"),
    ("core/db.py", "from flask_limiter import Limiter", "core is not allowed to import flask_limiter"),
    ("portal/errors.py", "import wsgi", "portal is not allowed to import wsgi"),
    ("core/config.py", "from wsgi import create_app", "core is not allowed to import wsgi"),
    ("api/errors.py", "import wsgi", "api is not allowed to import wsgi"),
    ("ops/health.py", "import wsgi", "ops is not allowed to import wsgi"),
    ("cli/admin.py", "from wsgi import app", "cli is not allowed to import wsgi"),
])
def test_a_broken_rule_is_reported(tmp_path, module, import_line, broken):
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(ROOT / "wsgi.py", tmp_path / "wsgi.py")
    with open(tmp_path / module, "a") as source:
        source.write(f"\n{import_line}  # deliberately against the layering\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert broken in result.stdout, result.stdout
