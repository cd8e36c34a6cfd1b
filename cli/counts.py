"""`flask --app wsgi counts verify|compact`: check the application counters against the table itself."""
from __future__ import annotations

import json

import click
from flask.cli import AppGroup

from core.applications.counters import compact_counts, verify_counts

counts_group = AppGroup("counts", help="Application counters behind the dashboard, cycles page and list totals.")


@counts_group.command("verify")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def verify_command(as_json: bool) -> None:
    """Compare every counter with COUNT(*) over the applications; exit status 1 when any differs."""
    mismatches = verify_counts()
    if as_json:
        click.echo(json.dumps({"ok": not mismatches, "mismatches": [
            {"table": m.table, "key": [str(part) for part in m.key], "counted": m.counted, "actual": m.actual}
            for m in mismatches]}))
    elif mismatches:
        for m in mismatches:
            click.echo(f"{m.table} {'/'.join(str(part) for part in m.key)}: counted {m.counted}, "
                       f"actual {m.actual}", err=True)
        click.echo(f"{len(mismatches)} counter(s) differ from the applications table.", err=True)
    else:
        click.echo("Every counter equals COUNT(*) of the applications table.")
    if mismatches:
        raise SystemExit(1)


@counts_group.command("compact")
def compact_command() -> None:
    """Fold the counters' delta rows now (the worker's sweep does this every few seconds)."""
    click.echo(f"Folded {compact_counts()} delta rows.")
