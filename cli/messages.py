"""`flask --app wsgi messages list [--institution ID] [--status S] [--channel C] [--json]`."""
from __future__ import annotations

import json

import click
from flask.cli import AppGroup

from cli.admin import domain_errors_as_usage
from core.messages.log import list_messages
from core.models.messages import CHANNELS, MESSAGE_STATUSES
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z

messages_group = AppGroup("messages", help="Inspect the emails and SMS sent to applicants.")


@messages_group.command("list")
@click.option("--institution", "institution_id", default=None, help="Only this institution's (ins_…).")
@click.option("--status", type=click.Choice(MESSAGE_STATUSES), default=None,
              help="Only messages with this status.")
@click.option("--channel", type=click.Choice(CHANNELS), default=None, help="Only email or only SMS.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500),
              help="Newest messages to show.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@domain_errors_as_usage
def list_command(institution_id: str | None, status: str | None, channel: str | None, limit: int,
                 as_json: bool) -> None:
    """The newest messages first, with their status, attempts and the last error."""
    scope = InstitutionScope(institution_id) if institution_id else None
    page = list_messages(scope, status=status, channel=channel, limit=limit)
    rows = [{
        "id": m.id, "institution_id": m.institution_id, "application_id": m.application_id,
        "decision_id": m.decision_id, "channel": m.channel, "recipient": m.recipient, "language": m.language,
        "subject": m.subject, "status": m.status, "attempts": m.attempts, "last_error": m.last_error,
        "provider_id": m.provider_id, "created_at": isoformat_z(m.created_at), "sent_at": isoformat_z(m.sent_at),
        "next_attempt_at": isoformat_z(m.next_attempt_at) if m.status == "retry_scheduled" else None,
    } for m in page.rows]
    if as_json:
        click.echo(json.dumps({"messages": rows}))
        return
    if not rows:
        click.echo("No messages.")
        return
    for r in rows:
        error = f"  error: {r['last_error']}" if r["last_error"] and r["status"] != "sent" else ""
        click.echo(f"{r['id']}  {r['created_at']}  {r['channel']:<5} {r['status']:<15} attempts={r['attempts']} "
                   f"{r['recipient']}{error}")
