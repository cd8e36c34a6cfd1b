"""`pip install` of the built wheel into a fresh virtual environment outside the checkout gives a working
`karibu`: migrations, the demo seeder, the API, templates and static files, all from site-packages."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv

import pytest
import requests

from tests.conftest import REDIS_URL, auth_header
from tests.ops.processes import ROOT, Processes, app_environment, free_port, wait_until_up

# Minutes of waiting on an outage or a clock: scheduled first, so parallel test workers finish together.
pytestmark = pytest.mark.long_running


def _tracked_files() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


@pytest.fixture
def processes(tmp_path):
    running = Processes(tmp_path)
    yield running
    running.stop_all()


def test_wheel_installs_and_runs_outside_the_checkout(tmp_path, processes):
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the checkout's files")
    source = tmp_path / "source"  # a clean copy: nothing untracked, no instance/, no .venv
    for name in _tracked_files():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                    str(source)], check=True)
    [wheel] = (tmp_path / "dist").glob("karibu-*.whl")

    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)  # no system or checkout site-packages: missing data would show
    python = environment / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel), "-c", str(ROOT / "constraints.txt")],
                   check=True)

    workdir = tmp_path / "run"  # neither the checkout nor the source copy
    workdir.mkdir()
    env = app_environment(f"sqlite:///{workdir / 'karibu.db'}", REDIS_URL, workdir)
    env.pop("KARIBU_INSTANCE_DIR")
    env.pop("DOCUMENT_STORAGE_DIR")
    env.pop("PYTHONPATH", None)
    karibu = str(environment / "bin" / "karibu")

    def run(*args: str) -> str:
        done = subprocess.run([karibu, *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    run("db", "upgrade")
    seeded = json.loads(run("seed-demo", "--applications", "5", "--json"))
    location = subprocess.run([str(python), "-c", "import wsgi; print(wsgi.__file__)"], cwd=workdir, env=env,
                              capture_output=True, text=True, check=True).stdout
    assert str(environment) in location and str(ROOT) not in location
    assert (workdir / "instance" / "documents").is_dir()  # the instance folder is the working directory's

    port = free_port()
    server = processes.start([str(environment / "bin" / "gunicorn"), "-c", "python:ops.gunicorn_config",
                              "--bind", f"127.0.0.1:{port}", "wsgi:app"], env, "installed-web", cwd=workdir)
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base + "/healthz", server)
    assert requests.get(base + "/readyz", timeout=10).json()["checks"]["migrations"] == "ok"
    listed = requests.get(base + "/api/v1/applications", headers=auth_header(seeded["api_key"]), timeout=10)
    assert listed.status_code == 200 and len(listed.json()["data"]) == 5
    login = requests.get(base + "/login", timeout=10)
    assert login.status_code == 200 and "<form" in login.text  # templates from the package
    assert requests.get(base + "/static/portal.css", timeout=10).status_code == 200  # static files too
    metrics = requests.get(base + "/metrics", timeout=10)
    assert metrics.status_code == 200 and 'endpoint="api.list_applications"' in metrics.text
