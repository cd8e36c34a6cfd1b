"""Data-subject requests from the command line: `flask --app wsgi applicants export|erase APPLICANT_ID …`.

APPLICANT_ID is an applicant (`apl_…`) or application id; every record of that person is covered.
"""
from __future__ import annotations

import json
import os
import tempfile

import click
from flask.cli import AppGroup, with_appcontext

from cli.admin import domain_errors_as_usage
from core.audit.recording import record_command
from core.privacy.subject_requests import erase, export_zip
from core.scoping import InstitutionScope

applicants_group = AppGroup("applicants", help="Data-subject requests: export or erase all the data of one person.")

_institution = click.option("--institution", required=True, help="The applicant's institution id.")
_requested_by = click.option("--requested-by", required=True,
                             help="Who asks (name or email of the operator or data-protection officer).")
_reason = click.option("--reason", required=True, help="Why (e.g. the applicant's request and its reference).")


@applicants_group.command("export")
@click.argument("applicant_id")
@_institution
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False, writable=True),
              help="Where to write the zip.")
@_requested_by
@_reason
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_appcontext
@domain_errors_as_usage
def export_command(applicant_id: str, institution: str, out_path: str, requested_by: str, reason: str,
                   as_json: bool) -> None:
    """Write everything Karibu holds about the person to a zip (applicant.json and the documents)."""
    applicant, archive = export_zip(InstitutionScope(institution), applicant_id, actor=f"cli:{requested_by}",
                                    reason=reason, source="cli",
                                    audit=lambda entry: record_command(entry, "applicants export"))
    directory = os.path.dirname(os.path.abspath(out_path))
    with tempfile.NamedTemporaryFile(dir=directory, delete=False, suffix=".part") as handle:
        for chunk in archive:
            handle.write(chunk)
    os.replace(handle.name, out_path)  # never a half-written zip under the requested name
    size = os.path.getsize(out_path)
    if as_json:
        click.echo(json.dumps({"applicant_id": applicant.id, "path": os.path.abspath(out_path), "bytes": size}))
    else:
        click.echo(f"Exported {applicant.id} to {out_path} ({size} bytes)")


@applicants_group.command("erase")
@click.argument("applicant_id")
@_institution
@_requested_by
@_reason
@click.option("--force", is_flag=True, help="Erase even while a sent decision awaits the applicant's answer.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_appcontext
@domain_errors_as_usage
def erase_command(applicant_id: str, institution: str, requested_by: str, reason: str, force: bool, yes: bool,
                  as_json: bool) -> None:
    """Replace the personal data of every record of the person with a tombstone and delete their documents
    (irreversible)."""
    if not yes and not as_json:
        click.confirm(f"Erase the personal data of {applicant_id} and every other record of that person? "
                      "This cannot be undone", abort=True)
    report = erase(InstitutionScope(institution), applicant_id, actor=f"cli:{requested_by}", reason=reason,
                   source="cli", force=force, audit=lambda entry: record_command(entry, "applicants erase"))
    if as_json:
        click.echo(json.dumps(report.as_dict()))
    else:
        click.echo(f"Erased {', '.join(report.applicant_ids)}: {report.applications} application(s) kept as "
                   f"tombstones, {report.documents_deleted} document(s) deleted, {report.events_scrubbed} event(s), "
                   f"{report.messages_scrubbed} message(s) and {report.audit_rows_scrubbed} audit row(s) cleaned")
