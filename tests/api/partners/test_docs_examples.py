"""Every shell, Python and Node example in README.md and docs/*.md, run as written against a demo server.

The server is the app on a free port with `seed-demo` data; each example gets `KARIBU_URL` and
`KARIBU_API_KEY` (the seeded live key) and runs in an empty folder. `curl` fails on an HTTP error status
(`--fail-with-body`) and shell examples run with `set -euo pipefail`, so a 4xx anywhere fails the test.

Two markers, as an HTML comment on the line before the fence:
- `<!-- example: NAME -->`: a complete program (client or webhook receiver) that tests/events/test_doc_examples.py
  or tests/api/partners/test_generated_client.py runs with the inputs it needs (a signed delivery, a cursor file, a
  generated client); this test checks it is run there.
- `<!-- not-run: reason -->`: not runnable here, and why. The reasons in use: starting the whole service,
  installing on a production host, benchmarks, operator commands on a person's data, developer fragments of
  the core API, payment callbacks that need a processor's secret, converting a partner's own old webhook
  secret, fragments. (PHP and Java examples are marked too, though only shell, Python and Node are run.)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"bash": "shell", "sh": "shell", "shell": "shell", "python": "python", "javascript": "node",
            "js": "node", "node": "node"}
MARKER = re.compile(r"^<!-- (example|not-run): *(.*?) *-->$")
CURL_FAILS_ON_HTTP_ERRORS = 'curl() { command curl --fail-with-body --silent --show-error "$@"; }\n'
PROGRAMS_TESTS = (ROOT / "tests" / "events" / "test_doc_examples.py",
                  ROOT / "tests" / "api" / "partners" / "test_generated_client.py")


@dataclass(frozen=True)
class Example:
    where: str  # file:line of the opening fence
    language: str
    code: str
    marker: str | None = None  # "example" or "not-run"
    note: str = ""


def examples() -> list[Example]:
    """The fenced blocks of a runnable language, with the marker on the line before each."""
    found = []
    for document in DOCUMENTS:
        lines = document.read_text().split("\n")
        number = 0
        while number < len(lines):
            fence = re.match(r"^```(\w*)\s*$", lines[number])
            if not fence:
                number += 1
                continue
            end = next(i for i in range(number + 1, len(lines)) if lines[i].startswith("```"))
            language = fence.group(1).lower()
            if language in RUNNABLE:
                marker = MARKER.match(lines[number - 1]) if number else None
                found.append(Example(f"{document.relative_to(ROOT)}:{number + 1}", RUNNABLE[language],
                                     "\n".join(lines[number + 1:end]) + "\n",
                                     marker.group(1) if marker else None, marker.group(2) if marker else ""))
            number = end + 1
    return found


RUN_HERE = [example for example in examples() if example.marker is None]


def test_every_marked_example_is_run_elsewhere_or_says_why_not():
    marked = [example for example in examples() if example.marker]
    programs = "".join(test.read_text() for test in PROGRAMS_TESTS)
    for example in marked:
        if example.marker == "example":
            assert f'"{example.note}"' in programs, f"{example.where}: {example.note} is run by no test"
        else:
            assert len(example.note) >= 10, f"{example.where}: a not-run example must say why"
    assert len(RUN_HERE) >= 3


def test_examples_read_karibu_url_not_a_fixed_port():
    for example in RUN_HERE:
        assert "127.0.0.1:8000" not in example.code and "localhost:8000" not in example.code, example.where
        assert "KARIBU_URL" in example.code, f"{example.where}: examples read KARIBU_URL"


@pytest.fixture
def demo(app, live_server):
    """Demo data as `scripts/run.sh` seeds it; the environment every example gets."""
    seeded = app.test_cli_runner().invoke(args=["seed-demo", "--applications", "30", "--json"])
    assert seeded.exit_code == 0, seeded.output
    payload = json.loads(seeded.output[seeded.output.index("{"):])
    return {"KARIBU_URL": live_server, "KARIBU_API_KEY": payload["api_key"]}


def run(example: Example, folder: Path, env: dict) -> subprocess.CompletedProcess:
    if example.language == "shell":
        command = ["bash", "-c", "set -euo pipefail\n" + CURL_FAILS_ON_HTTP_ERRORS + example.code]
    elif example.language == "python":
        (folder / "example.py").write_text(example.code)
        command = [sys.executable, "example.py"]
    else:
        if not shutil.which("node"):
            pytest.skip("node is not installed: the Node example is not run")
        (folder / "example.js").write_text(example.code)
        command = ["node", "example.js"]
    tools = Path(sys.executable).parent  # this environment's python3 and openapi-python-client come first
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"})


@pytest.mark.parametrize("example", RUN_HERE, ids=lambda example: example.where)
def test_example_runs_against_the_demo_server(example, demo, tmp_path):
    result = run(example, tmp_path, demo)
    assert result.returncode == 0, f"{example.where} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
