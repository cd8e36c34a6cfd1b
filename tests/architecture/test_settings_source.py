"""Guard: settings are read one way, `core.config.settings()` (the app's typed `Settings`).

Only the composition root (`wsgi.py`) touches the Flask config (it fills it, and Flask and its extensions read
their own keys there), and only `core/config.py` reads the process environment (`Settings.from_environment()`,
which also reads `.env`). Everywhere else a `current_app.config` / `app.config` access, or a read of
`os.environ` / `os.getenv`, is a setting read past `Settings` (and, for the environment, past `.env`).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "api", "portal", "jobs", "ops", "cli", "devtools")
ALLOWED = {"wsgi.py", "core/config.py"}


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
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
        elif isinstance(node, ast.Attribute) and _dotted(node) in ("os.environ", "os.getenv") \
                and id(node) not in written:
            what = "the environment"
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and \
                any(alias.name in ("environ", "getenv") for alias in node.names):
            what = "the environment"
        if what:
            found.append(f"{name}:{node.lineno}: reads {what}: {lines[node.lineno - 1].strip()}")
    return found


def test_settings_are_read_only_through_settings():
    offenders = [line for name, source in _sources() for line in settings_reads_past_settings(name, source)]
    assert offenders == [], ("read core.config.settings() instead (a new setting: a typed field in "
                             "core.config.Settings and a README row):\n" + "\n".join(offenders))


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
    ])
    reported = [int(line.split(":")[1]) for line in settings_reads_past_settings("example.py", source)]
    assert sorted(reported) == [2, 4, 5, 6, 7, 8, 9, 10, 11]
