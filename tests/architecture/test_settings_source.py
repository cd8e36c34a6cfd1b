"""Guard: settings are read one way, `core.config.settings()` (the app's typed `Settings`), and `core` reads no
request state.

Only the composition root (`wsgi.py`) touches the Flask config (it fills it, and Flask and its extensions read
their own keys there), and only `core/config.py` reads the process environment (`Settings.from_environment()`,
which also reads `.env`). Everywhere else a `current_app.config` / `app.config` access, a `current_app.secret_key`
/ `app.secret_key` read (the key is `settings().SECRET_KEY`), or a read of `os.environ` / `os.getenv`, is a
setting read past `Settings` (and, for the environment, past `.env`).

`core` is handed what it needs of a request by the web layer (docs/architecture.md, "Inside core/"): no module
of `core/` uses `flask.g`, `flask.request`, `flask.session` or asks whether there is a request or app context.
"""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "api", "portal", "jobs", "ops", "cli", "devtools")
ALLOWED = {"wsgi.py", "core/config.py"}


# What a request or its app context holds: core is passed what it needs instead.
REQUEST_STATE = ("g", "request", "session", "has_request_context", "has_app_context")


def _sources(root: Path = ROOT, packages=PACKAGES):
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name not in ALLOWED:
                yield name, path.read_text(encoding="utf-8")


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def settings_reads_past_settings(name: str, source: str) -> list[str]:
    """Where `source` touches a Flask config or reads the environment (writing `os.environ[...] = …`, to
    hand a value to a library that reads it there, is no read)."""
    tree = ast.parse(source, name)
    lines = source.splitlines()
    written = {id(node.value) for node in ast.walk(tree)  # the `os.environ` of `os.environ[…] = …`
               if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)}
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Attribute) and node.attr == "config" and \
                _dotted(node.value).rsplit(".", 1)[-1] in ("current_app", "app"):
            what = "the Flask config"
        elif isinstance(node, ast.Attribute) and node.attr == "secret_key" and \
                _dotted(node.value).rsplit(".", 1)[-1] in ("current_app", "app"):
            what = "the Flask secret key"
        elif isinstance(node, ast.Attribute) and _dotted(node) in ("os.environ", "os.getenv") \
                and id(node) not in written:
            what = "the environment"
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and \
                any(alias.name in ("environ", "getenv") for alias in node.names):
            what = "the environment"
        if what:
            found.append(f"{name}:{node.lineno}: reads {what}: {lines[node.lineno - 1].strip()}")
    return found


def request_state_reads(name: str, source: str) -> list[str]:
    """Where `source` uses Flask's request state (`from flask import g`, `flask.request`, …)."""
    tree = ast.parse(source, name)
    lines = source.splitlines()
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.ImportFrom) and node.module in ("flask", "flask.globals", "flask.ctx"):
            used = [alias.name for alias in node.names if alias.name in REQUEST_STATE]
            what = ", ".join(f"flask.{used_name}" for used_name in used)
        elif isinstance(node, ast.Attribute) and node.attr in REQUEST_STATE and \
                _dotted(node.value) in ("flask", "flask.globals", "flask.ctx"):
            what = f"flask.{node.attr}"
        if what:
            found.append(f"{name}:{node.lineno}: uses {what}: {lines[node.lineno - 1].strip()}")
    return found


def _offenders(root: Path = ROOT) -> list[str]:
    settings = [line for name, source in _sources(root) for line in settings_reads_past_settings(name, source)]
    request_state = [line for name, source in _sources(root, ("core",)) for line in request_state_reads(name, source)]
    return settings + request_state


def test_settings_are_read_only_through_settings():
    offenders = [line for name, source in _sources() for line in settings_reads_past_settings(name, source)]
    assert offenders == [], ("read core.config.settings() instead (a new setting: a typed field in "
                             "core.config.Settings and a README row):\n" + "\n".join(offenders))


def test_core_reads_no_request_state():
    offenders = [line for name, source in _sources(ROOT, ("core",)) for line in request_state_reads(name, source)]
    assert offenders == [], ("core is handed what it needs of a request by the web layer (a parameter, or a "
                             "context variable core owns that wsgi.py sets):\n" + "\n".join(offenders))


def test_the_guard_sees_each_kind_of_read():
    """The check itself: every form of read is reported, the one allowed write is not."""
    source = "\n".join([
        "import os",
        "from os import environ",
        "from flask import current_app",
        "a = current_app.config['API_RATE_LIMIT']",
        "b = current_app.config.get('LOG_LEVEL')",
        "c = app.config['PROXY_COUNT']",
        "d = os.environ.get('KARIBU_BIND')",
        "e = os.environ['WEB_CONCURRENCY']",
        "f = os.getenv('LOG_FORMAT')",
        "g = 'X' in os.environ",
        "h = state.app.config.get('SECRET_KEY')",
        "os.environ['PROMETHEUS_MULTIPROC_DIR'] = '/tmp/metrics'",
        "i = current_app.secret_key",
        "j = URLSafeTimedSerializer(flask.current_app.secret_key)",
        "k = app.secret_key",
        "key = settings().SECRET_KEY",
    ])
    reported = [int(line.split(":")[1]) for line in settings_reads_past_settings("example.py", source)]
    assert sorted(reported) == [2, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15]


def test_the_guard_sees_each_kind_of_request_state():
    """The check itself: every way of reaching a request's state is reported, the app and other names are not."""
    source = "\n".join([
        "import flask",
        "from flask import current_app, g",
        "from flask import request",
        "from flask import has_request_context, has_app_context, session",
        "from flask.globals import g as flask_g",
        "a = flask.g.get('scope')",
        "b = flask.request.path",
        "from flask import Config, current_app",
        "c = g.audit",
        "request = build_request()",
    ])
    reported = [int(line.split(":")[1]) for line in request_state_reads("example.py", source)]
    assert sorted(reported) == [2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("module, line, reported", [
    ("portal/errors.py", "KEY = current_app.secret_key", "reads the Flask secret key"),
    ("api/errors.py", "KEY = flask.current_app.secret_key", "reads the Flask secret key"),
    ("core/timefmt.py", "LIMIT = current_app.config['API_RATE_LIMIT']", "reads the Flask config"),
    ("cli/admin.py", "PORT = os.environ.get('PORT')", "reads the environment"),
    ("core/applications/bulkheads.py", "from flask import g", "uses flask.g"),
    ("core/redis_faults.py", "from flask import has_app_context", "uses flask.has_app_context"),
    ("core/audit/recording.py", "PATH = flask.request.path", "uses flask.request"),
])
def test_a_broken_rule_is_reported(tmp_path, module, line, reported):
    """Each rule bites: a copy of the code with one offending line appended fails the guard, naming the line."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    assert _offenders(tmp_path) == []
    with open(tmp_path / module, "a") as source:
        source.write(f"\n{line}  # deliberately against the rule\n")
    offenders = _offenders(tmp_path)
    assert len(offenders) == 1 and offenders[0].startswith(module + ":") and reported in offenders[0], offenders
