"""`flask --app wsgi secrets reencrypt [--json]`: every stored ciphertext rewritten under SECRET_KEY (docs/cli.md)."""
from __future__ import annotations

import json
import sys

import click
from flask.cli import AppGroup

from core.config import settings
from core.encryption.columns import REENCRYPT_BATCH, reencrypt_all, stored_ciphertexts

secrets_group = AppGroup("secrets", help="Rotate SECRET_KEY: what it encrypts at rest.")


@secrets_group.command("reencrypt")
@click.option("--batch-size", default=REENCRYPT_BATCH, show_default=True, type=click.IntRange(min=1),
              help="Rows read and committed at a time.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def reencrypt_command(batch_size: int, as_json: bool) -> None:
    """Rewrite each ciphertext made under a key of SECRET_KEY_FALLBACKS under SECRET_KEY (safe to run again, or
    to stop and resume); rows no key can read are listed, not changed."""
    with click.progressbar(length=stored_ciphertexts(), label="Re-encrypting", file=sys.stderr,
                           show_pos=True) as bar:
        reports = reencrypt_all(on_batch=lambda _column, rows: bar.update(rows), batch_size=batch_size)
    unreadable = sum(len(report.unreadable) for report in reports)
    if as_json:
        click.echo(json.dumps({
            "fallback_keys": len(settings().SECRET_KEY_FALLBACKS),
            "reencrypted": sum(report.reencrypted for report in reports),
            "already_current": sum(report.current for report in reports),
            "changed_meanwhile": sum(report.changed_meanwhile for report in reports),
            "unreadable": unreadable, "columns": [report.as_dict() for report in reports]}))
        return
    for report in reports:
        line = f"{report.column}: {report.reencrypted} re-encrypted, {report.current} already under SECRET_KEY"
        if report.changed_meanwhile:
            line += f", {report.changed_meanwhile} changed meanwhile (run again)"
        if report.unreadable:
            line += f", {len(report.unreadable)} unreadable under every key: {', '.join(report.unreadable)}"
        click.echo(line)
    if unreadable:
        click.echo("Unreadable rows were made under a key that is in neither SECRET_KEY nor SECRET_KEY_FALLBACKS: "
                   "add that key to SECRET_KEY_FALLBACKS and run again, or replace them (rotate the webhook "
                   "secret, reset the user's two-factor, resend the message).", err=True)
