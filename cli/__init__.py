"""Operator commands (docs/cli.md), registered on the app by `wsgi.register_commands`: `flask --app wsgi …`."""
from __future__ import annotations

from cli.admin import ADMIN_COMMANDS, users_cli
from cli.counts import counts_group
from cli.dev_servers import DEV_SERVER_COMMANDS
from cli.messages import messages_group
from cli.migrations import migration_commands
from cli.privacy import applicants_group
from cli.retention import retention_group
from cli.sandbox import sandbox_group
from cli.secrets import secrets_group
from cli.sender_domains import sender_domains_group
from cli.simulator import registry_simulator_command
from cli.sso import sso_group
from cli.two_factor import reset_two_factor_command
from cli.webhooks import webhooks_group

users_cli.add_command(reset_two_factor_command)
COMMANDS = (*ADMIN_COMMANDS, counts_group, registry_simulator_command, webhooks_group, messages_group,
            retention_group, secrets_group, applicants_group, migration_commands, *DEV_SERVER_COMMANDS,
            sender_domains_group, sso_group, sandbox_group)
