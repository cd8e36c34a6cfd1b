"""`users reset-two-factor`: the way back in for a staff member who lost both their phone and recovery codes."""
from __future__ import annotations

import json

import click
from flask.cli import with_appcontext

from cli.admin import domain_errors_as_usage
from core.accounts import two_factor
from core.audit.recording import AuditEntry, record_command
from core.scoping import InstitutionScope


@click.command("reset-two-factor")
@click.option("--institution", "institution_id", required=True)
@click.option("--email", required=True)
@click.option("--json", "as_json", is_flag=True)
@with_appcontext
@domain_errors_as_usage
def reset_two_factor_command(institution_id: str, email: str, as_json: bool) -> None:
    """Remove a user's two-factor set-up (after checking who asks, out of band); they sign in with the password
    and, if their institution requires it, enrol again."""
    user, had = two_factor.reset(InstitutionScope(institution_id), email)
    record_command(AuditEntry(source="cli", actor="cli", institution_id=institution_id, action="two_factor.reset",
                              target=user.id), "users reset-two-factor")
    if as_json:
        click.echo(json.dumps({"user_id": user.id, "had_two_factor": had}))
    else:
        click.echo(f"Two-factor sign-in of {user.email} removed." if had
                   else f"{user.email} had no two-factor sign-in.")
