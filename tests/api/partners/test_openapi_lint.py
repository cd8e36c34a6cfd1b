"""A second, independent check of the served OpenAPI document: Redocly CLI's `lint` (recommended rules, from the
npm registry) finds no errors. Warnings (an unused component, no license) are allowed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

REDOCLY = "@redocly/cli@2.77.0"
# npm's messages when it cannot reach the registry (DNS, refused, timed out, offline).
UNREACHABLE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "ENETUNREACH", "ENOTCACHED")


def npm_cache() -> Path:
    """Outside the repository: the user's cache folder, shared by runs so the package is fetched once."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "karibu-tests" / "npm"


def test_redocly_lint_finds_no_errors(live_server, tmp_path):
    if not shutil.which("npx"):
        pytest.skip("npx (npm) is not installed: the Redocly lint is not run")
    document = tmp_path / "openapi.json"
    document.write_bytes(requests.get(f"{live_server}/api/v1/openapi.json", timeout=10).content)
    result = subprocess.run(
        ["npx", "--yes", "--cache", str(npm_cache()), REDOCLY, "lint", "--format=json", str(document)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"})
    if result.returncode != 0 and any(code in result.stderr for code in UNREACHABLE):
        pytest.skip(f"the npm registry is unreachable: {result.stderr.strip()[-300:]}")
    report = json.loads(result.stdout[result.stdout.index("{"):])
    errors = [f"{problem['ruleId']}: {problem['message']} at {problem['location'][0]['pointer']}"
              for problem in report["problems"] if problem["severity"] == "error"]
    assert report["totals"]["errors"] == 0 and not errors, "\n".join(errors)
    assert result.returncode == 0, result.stderr[-2000:]
