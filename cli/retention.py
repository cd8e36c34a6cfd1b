"""`flask --app wsgi retention run [--dry-run] [--json]`: the daily purge, by hand."""
from __future__ import annotations

import json
import sys

import click
from flask.cli import AppGroup, with_appcontext

from core.privacy.retention import run_retention

retention_group = AppGroup("retention", help="Delete rows older than their retention period.")


@retention_group.command("run")
@click.option("--dry-run", is_flag=True, help="Count what would be deleted; delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_appcontext
def run_command(dry_run: bool, as_json: bool) -> None:
    """Delete expired audit rows, webhook deliveries and attempts, and events (never the billing ledger)."""
    def progress(kind: str, count: int) -> None:
        if not as_json:
            click.echo(f"  {kind}: deleted a batch of {count}", file=sys.stderr)

    reports = run_retention(dry_run=dry_run, on_batch=progress)
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, "kinds": [report.as_dict() for report in reports]}))
        return
    verb = "would delete" if dry_run else "deleted"
    for report in reports:
        extra = "".join(f", {count} {table}" for table, count in report.dependants_deleted.items())
        click.echo(f"{report.name}: {verb} {report.deleted} rows older than {report.cutoff:%Y-%m-%d %H:%M}{extra}")
