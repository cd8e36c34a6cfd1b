"""Guard: `core` reads configuration only through `core.config.settings()` (typed `Settings`)."""
from __future__ import annotations

import re
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
CONFIG_READ = re.compile(r"\b(current_app|app)\.config\b")


def test_core_reads_configuration_only_through_settings():
    offenders = [f"{path.relative_to(CORE.parent)}:{number}: {line.strip()}"
                 for path in sorted(CORE.rglob("*.py")) if path != CORE / "config.py"
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if CONFIG_READ.search(line)]
    assert offenders == [], "read core.config.settings() instead:\n" + "\n".join(offenders)
