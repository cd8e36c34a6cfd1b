"""`flask --app wsgi webhooks set|rotate|ping|log|enable|redeliver|recover` (docs/cli.md)."""
from __future__ import annotations

import json

import click
from flask.cli import AppGroup

from cli.admin import domain_errors_as_usage
from core.institutions.sandbox import sandbox_scope
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z, parse_utc
from core.webhooks.endpoints import enable_endpoint, rotate_secret, save_endpoint
from core.webhooks.log import last_errors, list_deliveries, recover_since, redeliver, send_test_ping

webhooks_group = AppGroup("webhooks", help="Configure the institution's webhook endpoint and inspect deliveries.")

_institution = click.option("--institution", "institution_id", required=True, help="Institution id (ins_…).")
_as_json = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")


def _emit(as_json: bool, payload: dict, human: str) -> None:
    click.echo(json.dumps(payload) if as_json else human)


@webhooks_group.command("set")
@_institution
@click.option("--url", required=True, help="https URL that receives the events.")
@click.option("--events", default=None, help="Comma-separated event types (default: all; kept on update).")
@click.option("--include-name/--no-include-name", "include_name", default=None,
              help="Include the applicant's name in application.* events (off by default).")
@click.option("--test", "test_mode", is_flag=True,
              help="The endpoint of test-mode events (else they go to the live endpoint).")
@_as_json
@domain_errors_as_usage
def set_command(institution_id: str, url: str, events: str | None, include_name: bool | None, test_mode: bool,
                as_json: bool) -> None:
    """Create or update the endpoint; a signing secret is printed once, when the endpoint is created."""
    scope = InstitutionScope(institution_id)
    endpoint, secret = save_endpoint(sandbox_scope(scope) if test_mode else scope, url, events, include_name)
    payload = {"endpoint_id": endpoint.id}
    human = [f"Endpoint {endpoint.id}: {endpoint.url}", f"Events: {', '.join(endpoint.event_types)}"]
    if secret is not None:
        payload["signing_secret"] = secret
        human.append(f"Signing secret: {secret}  (shown once)")
    _emit(as_json, payload, "\n".join(human))


@webhooks_group.command("rotate")
@_institution
@_as_json
@domain_errors_as_usage
def rotate_command(institution_id: str, as_json: bool) -> None:
    """Replace the signing secret; the old one stops working at once."""
    secret = rotate_secret(InstitutionScope(institution_id))
    _emit(as_json, {"signing_secret": secret}, f"New signing secret: {secret}  (shown once)")


@webhooks_group.command("ping")
@_institution
@domain_errors_as_usage
def ping_command(institution_id: str) -> None:
    """Queue a webhook.test event to the configured URL."""
    delivery = send_test_ping(InstitutionScope(institution_id))
    click.echo(f"Queued webhook.test delivery {delivery.id} (event {delivery.event_id})")


@webhooks_group.command("log")
@_institution
@click.option("--status", default=None, help="Only deliveries with this status.")
@click.option("--limit", default=50, show_default=True, type=int, help="Newest deliveries to show (1..200).")
@_as_json
@domain_errors_as_usage
def log_command(institution_id: str, status: str | None, limit: int, as_json: bool) -> None:
    """The delivery log, newest first."""
    page = list_deliveries(InstitutionScope(institution_id), status, limit=limit)
    errors = last_errors([d.id for d in page.rows])
    rows = [{
        "id": d.id,
        "event_id": d.event_id,
        "type": d.event_type,
        "status": d.status,
        "attempts": d.attempts,
        "last_response_code": d.last_response_code,
        "last_error_class": d.last_error_class,
        "last_error": errors.get(d.id) if d.status != "delivered" else None,
        "next_attempt_at": isoformat_z(d.next_attempt_at),
    } for d in page.rows]
    human = "\n".join(
        f"{r['id']}  {r['type']:<22} {r['status']:<17} attempts={r['attempts']} "
        f"last={r['last_response_code'] or r['last_error_class'] or '-'} next={r['next_attempt_at'] or '-'}"
        + (f"\n    {r['last_error']}" if r["last_error"] else "") for r in rows
    ) or "No deliveries."
    _emit(as_json, {"deliveries": rows}, human)


@webhooks_group.command("enable")
@_institution
@domain_errors_as_usage
def enable_command(institution_id: str) -> None:
    """Re-enable a disabled endpoint and reset its failure count."""
    endpoint = enable_endpoint(InstitutionScope(institution_id))
    click.echo(f"Endpoint {endpoint.id} enabled")


@webhooks_group.command("redeliver")
@_institution
@click.argument("delivery_id")
@domain_errors_as_usage
def redeliver_command(institution_id: str, delivery_id: str) -> None:
    """Queue one delivery again now."""
    delivery = redeliver(InstitutionScope(institution_id), delivery_id)
    click.echo(f"Queued delivery {delivery.id} again")


@webhooks_group.command("recover")
@_institution
@click.option("--since", required=True, help="ISO date or datetime (UTC): resend failed, dead and skipped "
                                              "deliveries created since then.")
@domain_errors_as_usage
def recover_command(institution_id: str, since: str) -> None:
    """Resend every failed, dead or disabled-skipped delivery since a time."""
    try:
        since_at = parse_utc(since)
    except ValueError:
        raise click.BadParameter("must be an ISO date or datetime", param_hint="--since") from None
    count = recover_since(InstitutionScope(institution_id), since_at)
    click.echo(f"Queued {count} deliveries again")
