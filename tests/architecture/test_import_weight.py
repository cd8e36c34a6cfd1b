"""A web worker imports only what serving requests needs: heavy libraries of other processes (the RQ worker,
the migrations CLI, development servers) or of rare actions (an export, a two-factor enrolment, a signing
secret) are imported where they are first used. Each one kept out is megabytes in every gunicorn worker."""
import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# module → where it belongs
LOADED_ON_FIRST_USE = {
    "requests": "webhook transport, live registry lookups, SMS",
    "urllib3": "webhook transport, live registry lookups, SMS",
    "rq": "the first enqueue; the worker command",
    "cryptography.fernet": "the first webhook or two-factor secret stored or read",
    "xlsxwriter": "the first Excel export",
    "segno": "two-factor enrolment and the apply link's QR code",
    "aiosmtpd": "the development mail sink",
    "alembic": "flask db commands",
    "jwt": "the first identity token",
    "babel.messages": "compiling a changed catalogue",
    "jobs.upkeep": "the worker command",
    "zipstream": "the first document bundle or data-subject export",
    "isal": "the first document bundle",
    "devtools.seed": "seed-demo",
    "devtools.registry_simulator": "the registry-simulator command",
    "devtools.simulated_records": "the registry-simulator command",
    "yaml": "the first API request (the OpenAPI document its query check reads)",
}


def test_the_app_does_not_import_what_only_other_processes_or_rare_actions_need(tmp_path):
    probe = ("import json, sys, wsgi; "
             f"print(json.dumps(sorted(name for name in {sorted(LOADED_ON_FIRST_USE)!r} if name in sys.modules)))")
    environment = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'karibu.db'}",
                   "SECRET_KEY": "import-weight-test-secret-of-at-least-32-characters",
                   "KARIBU_INSTANCE_DIR": str(tmp_path / "instance"), "LOG_LEVEL": "WARNING"}
    for _ in range(2):  # the first start compiles the catalogues into the new instance folder
        completed = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_ROOT, env=environment,
                                   capture_output=True, text=True, timeout=120, check=True)
    imported = json.loads(completed.stdout.strip().splitlines()[-1])
    assert imported == [], {name: LOADED_ON_FIRST_USE[name] for name in imported}
