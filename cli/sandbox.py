"""`flask --app wsgi sandbox …`: an institution's test-mode data (docs/cli.md)."""
from __future__ import annotations

import json
import sys

import click
from flask.cli import AppGroup

from cli.admin import domain_errors_as_usage
from core.institutions.sandbox import SANDBOX_APPLICATIONS, reset_sandbox
from core.scoping import InstitutionScope

sandbox_group = AppGroup("sandbox", help="An institution's test-mode data (what sk_test_ keys reach).")


@sandbox_group.command("reset")
@click.option("--institution", "institution_id", required=True, help="Institution id (ins_…).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@domain_errors_as_usage
def reset_command(institution_id: str, yes: bool, as_json: bool) -> None:
    """Delete the sandbox's applicants, applications, events and messages and generate them afresh (the live
    institution's programs, cycles and pipeline; test keys and the test webhook endpoint stay)."""
    if not yes and not as_json:
        click.confirm(f"Delete every test-mode record of {institution_id} and generate new sample data?",
                      abort=True)
    with click.progressbar(length=SANDBOX_APPLICATIONS, label="Generating sample applications", file=sys.stderr,
                           show_pos=True) as bar:
        sandbox = reset_sandbox(InstitutionScope(institution_id), on_progress=bar.update)
    if as_json:
        click.echo(json.dumps({"institution_id": institution_id, "sandbox_id": sandbox.institution_id,
                               "applications": SANDBOX_APPLICATIONS}))
    else:
        click.echo(f"Sandbox of {institution_id} reset: {SANDBOX_APPLICATIONS} sample applications")
