"""Operator commands (docs/cli.md): `flask --app wsgi <command>`. `--json` prints one JSON object only."""
from __future__ import annotations

import json
import sys
from functools import wraps

import click
from flask.cli import AppGroup, with_appcontext

from core.config import settings
from core.errors import KaribuError
from core.db import db
from core.institutions import create_institution
from core.accounts.api_keys import create_api_key, revoke_api_key
from core.models.identity import ROLES
from core.scoping import InstitutionScope
from core.accounts.users import create_user


def _emit(as_json: bool, payload: dict, human: str) -> None:
    click.echo(json.dumps(payload) if as_json else human)


def domain_errors_as_usage(command):
    """Show a domain error as a one-line CLI error (exit status 1) instead of a traceback."""
    @wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KaribuError as error:
            db.session.rollback()
            raise click.ClickException(error.message) from None
    return wrapper


@click.command("seed-demo")
@click.option("--applications", default=200, show_default=True, type=click.IntRange(min=0),
              help="Top up Demo University to this many applications.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_appcontext
@domain_errors_as_usage
def seed_demo_command(applications: int, as_json: bool) -> None:
    """Create (idempotently) Demo University with demo data, an admin user and a new live API key."""
    from devtools.seed import seed_demo  # the demo data generator only when seeding, not in web workers

    with click.progressbar(length=applications, label="Seeding applications", file=sys.stderr,
                           show_eta=True, show_pos=True) as bar:
        result = seed_demo(applications, on_progress=bar.update)
    _, raw_key = create_api_key(InstitutionScope(result.institution_id), name="seed-demo")
    payload = {
        "institution_id": result.institution_id,
        "api_key": raw_key,
        "staff_email": result.staff_email,
        "staff_password": result.staff_password,
        "trial_api_key": settings().TRIAL_API_KEY,
    }
    _emit(as_json, payload, "\n".join([
        f"Demo University: {result.institution_id} ({result.created_applications} applications added)",
        f"Staff login:     {result.staff_email} / {result.staff_password}",
        f"Live API key:    {raw_key}  (shown once)",
        f"Trial API key:   {payload['trial_api_key']}",
    ]))


institutions_cli = AppGroup("institutions", help="Manage institutions.")


@institutions_cli.command("create")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@domain_errors_as_usage
def create_institution_command(name: str, as_json: bool) -> None:
    """Create a new, empty institution with the default stage pipeline."""
    institution = create_institution(name)
    _emit(as_json, {"institution_id": institution.id}, f"Created institution {institution.id}")


api_keys_cli = AppGroup("api-keys", help="Manage live and test API keys.")


@api_keys_cli.command("create")
@click.option("--institution", "institution_id", required=True)
@click.option("--name", default="", help="A label to recognise the key by.")
@click.option("--test", "test_mode", is_flag=True, help="A test-mode key (sk_test_…): it reaches the sandbox only.")
@click.option("--json", "as_json", is_flag=True)
@domain_errors_as_usage
def create_api_key_command(institution_id: str, name: str, test_mode: bool, as_json: bool) -> None:
    """Create a live (or, with --test, a test) key. The key is printed once and cannot be shown again."""
    key, raw_key = create_api_key(InstitutionScope(institution_id), name=name, test=test_mode)
    _emit(as_json, {"key_id": key.id, "api_key": raw_key},
          f"Key {key.id}: {raw_key}\nStore it now: it is not shown again.")


@api_keys_cli.command("revoke")
@click.argument("key_id")
@domain_errors_as_usage
def revoke_api_key_command(key_id: str) -> None:
    """Revoke a key at once."""
    revoke_api_key(key_id)
    click.echo(f"Revoked {key_id}")


users_cli = AppGroup("users", help="Manage portal users.")


@users_cli.command("create")
@click.option("--institution", "institution_id", required=True)
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--role", type=click.Choice(ROLES), default="staff", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@domain_errors_as_usage
def create_user_command(institution_id: str, email: str, password: str, role: str, as_json: bool) -> None:
    """Create a portal user (argon2-hashed password)."""
    user = create_user(InstitutionScope(institution_id), email, password, role)
    _emit(as_json, {"user_id": user.id}, f"Created {role} {user.email} ({user.id})")


ADMIN_COMMANDS = (seed_demo_command, institutions_cli, api_keys_cli, users_cli)
