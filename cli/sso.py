"""`sso set|show|remove`: an institution's sign-in with its university accounts (OpenID Connect)."""
from __future__ import annotations

import json

import click
from flask.cli import AppGroup

from cli.admin import domain_errors_as_usage
from core.accounts import sso
from core.audit.recording import AuditEntry, record_command
from core.scoping import InstitutionScope

sso_group = AppGroup("sso", help="Staff sign-in with the university's account (OpenID Connect).")


def _describe(settings: sso.SsoSettings) -> str:
    return "\n".join([
        f"Institution:    {settings.institution_id}",
        f"Issuer:         {settings.issuer}",
        f"Client ID:      {settings.client_id}",
        "Client secret:  set (never shown)",
        f"Domains:        {', '.join(settings.domains)}",
        f"Required:       {'yes: password sign-in refused on these domains' if settings.require else 'no'}",
        f"New accounts:   {settings.create_users}",
        f"Redirect URI:   {settings.as_json()['redirect_uri']}",
    ])


@sso_group.command("set")
@click.option("--institution", "institution_id", required=True)
@click.option("--issuer", required=True, help="The provider's issuer URL (https://…).")
@click.option("--client-id", required=True)
@click.option("--client-secret", required=True, help="Stored encrypted; never shown again.")
@click.option("--domains", required=True, help="Comma-separated email domains, e.g. ur.ac.rw,cst.ur.ac.rw.")
@click.option("--require", is_flag=True, help="Refuse password sign-in for accounts on these domains.")
@click.option("--create-users", type=click.Choice(sso.CREATE_USERS_CHOICES), default=sso.CREATE_NONE,
              show_default=True, help="staff: a first sign-in without an account makes a staff account.")
@click.option("--json", "as_json", is_flag=True)
@domain_errors_as_usage
def set_command(institution_id: str, issuer: str, client_id: str, client_secret: str, domains: str, require: bool,
                create_users: str, as_json: bool) -> None:
    """Set or replace the institution's provider (every setting at once)."""
    settings, ended = sso.configure(InstitutionScope(institution_id), issuer=issuer, client_id=client_id,
                                    client_secret=client_secret, domains=domains, require=require,
                                    create_users=create_users)
    record_command(AuditEntry(source="cli", actor="cli", institution_id=institution_id, action="sso.set",
                              target=",".join(settings.domains),
                              detail=f"issuer {settings.issuer}; require {settings.require}; "
                                     f"create users {settings.create_users}; sessions ended {ended}"), "sso set")
    if as_json:
        click.echo(json.dumps({**settings.as_json(), "sessions_ended": ended}))
    else:
        click.echo(_describe(settings) + (f"\n{ended} password session(s) ended." if ended else ""))


@sso_group.command("show")
@click.option("--institution", "institution_id", required=True)
@click.option("--json", "as_json", is_flag=True)
@domain_errors_as_usage
def show_command(institution_id: str, as_json: bool) -> None:
    """The institution's provider (the client secret is never shown)."""
    settings = sso.configuration(InstitutionScope(institution_id))
    if settings is None:
        raise click.ClickException(f"institution {institution_id} has no university sign-in")
    click.echo(json.dumps(settings.as_json()) if as_json else _describe(settings))


@sso_group.command("remove")
@click.option("--institution", "institution_id", required=True)
@click.option("--json", "as_json", is_flag=True)
@domain_errors_as_usage
def remove_command(institution_id: str, as_json: bool) -> None:
    """Remove the institution's provider: its staff sign in with passwords again."""
    removed = sso.remove(InstitutionScope(institution_id))
    if removed:
        record_command(AuditEntry(source="cli", actor="cli", institution_id=institution_id, action="sso.removed"),
                       "sso remove")
    if as_json:
        click.echo(json.dumps({"institution_id": institution_id, "removed": removed}))
    else:
        click.echo("University sign-in removed." if removed else "There was no university sign-in to remove.")
