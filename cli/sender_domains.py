"""`flask --app wsgi sender-domains add|verify|list|remove` (docs/cli.md): an institution's own sending domains."""
from __future__ import annotations

import json
from dataclasses import asdict

import click
from flask.cli import AppGroup

from cli.admin import domain_errors_as_usage
from core.audit.recording import AuditEntry, record_command
from core.institutions.sender_domains import (
    Finding, add_sender_domain, check_sender_domain, records_to_publish, remove_sender_domain, sender_domains,
)
from core.models.sender_domains import SenderDomain
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z

sender_domains_group = AppGroup("sender-domains", help="An institution's own sending domains, proven in DNS.")

_institution = click.option("--institution", "institution_id", required=True, help="Institution id (ins_…).")
_as_json = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")


def _described(row: SenderDomain) -> dict:
    return {"domain": row.domain, "status": row.status,
            "verified_at": isoformat_z(row.verified_at), "last_checked_at": isoformat_z(row.last_checked_at),
            "problems": [Finding(**finding).sentence() for finding in row.last_problems or []],
            "records": [asdict(record) for record in records_to_publish(row)]}


def _records_text(row: SenderDomain) -> str:
    return "\n".join(f"  {record.type} {record.name}\n    {record.value}" for record in records_to_publish(row))


def _audit(institution_id: str, action: str, domain: str, command: str) -> None:
    record_command(AuditEntry(source="cli", actor="cli", institution_id=institution_id, action=action,
                              target=domain), command)


@sender_domains_group.command("add")
@_institution
@click.argument("domain")
@_as_json
@domain_errors_as_usage
def add_command(institution_id: str, domain: str, as_json: bool) -> None:
    """Record DOMAIN for the institution and print the two TXT records to publish (ownership and DKIM key)."""
    row = add_sender_domain(InstitutionScope(institution_id), domain)
    _audit(institution_id, "sender_domain.add", row.domain, "sender-domains add")
    if as_json:
        click.echo(json.dumps(_described(row)))
        return
    click.echo(f"Publish these TXT records in the DNS of {row.domain}, then run sender-domains verify:\n"
               f"{_records_text(row)}")


@sender_domains_group.command("verify")
@_institution
@click.argument("domain")
@_as_json
@domain_errors_as_usage
def verify_command(institution_id: str, domain: str, as_json: bool) -> None:
    """Look DOMAIN's records up now; exit status 1 when it is not proven."""
    check = check_sender_domain(InstitutionScope(institution_id), domain)
    if as_json:
        click.echo(json.dumps({"domain": check.domain.domain, "verified": check.verified,
                               "status": check.domain.status, "problems": check.problems,
                               "checked_at": isoformat_z(check.domain.last_checked_at)}))
    elif check.verified:
        click.echo(f"{check.domain.domain} is proven: emails of the institution go out from it, DKIM-signed.")
    else:
        click.echo(f"{check.domain.domain} is not proven ({check.domain.status}):\n"
                   + "\n".join(f"  - {problem}" for problem in check.problems))
    if not check.verified:
        raise SystemExit(1)


@sender_domains_group.command("list")
@_institution
@_as_json
@domain_errors_as_usage
def list_command(institution_id: str, as_json: bool) -> None:
    """The institution's sending domains with their state and records."""
    rows = sender_domains(InstitutionScope(institution_id))
    if as_json:
        click.echo(json.dumps({"domains": [_described(row) for row in rows]}))
        return
    if not rows:
        click.echo("No sending domain: emails go out from the platform's address.")
    for row in rows:
        checked = isoformat_z(row.last_checked_at) if row.last_checked_at else "never"
        click.echo(f"{row.domain}  {row.status}  (last checked: {checked})\n{_records_text(row)}")


@sender_domains_group.command("remove")
@_institution
@click.argument("domain")
@_as_json
@domain_errors_as_usage
def remove_command(institution_id: str, domain: str, as_json: bool) -> None:
    """Forget DOMAIN and its DKIM key: emails go out from the platform's address again."""
    removed = remove_sender_domain(InstitutionScope(institution_id), domain)
    _audit(institution_id, "sender_domain.remove", removed, "sender-domains remove")
    click.echo(json.dumps({"removed": True, "domain": removed}) if as_json else f"{removed} removed.")
