"""`flask db …` (Flask-Migrate), with Flask-Migrate and Alembic imported on first use only."""
from __future__ import annotations

from functools import cached_property

import click


class MigrationCommands(click.Group):
    """Flask-Migrate's own `db` group, imported when a `db` command is parsed or listed."""

    def __init__(self):
        super().__init__(name="db", help="Perform database migrations.")

    @cached_property
    def _group(self) -> click.Group:
        from flask_migrate.cli import db

        return db

    def make_context(self, info_name, args, parent=None, **extra):
        return self._group.make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        return self._group.invoke(ctx)

    def list_commands(self, ctx):
        return self._group.list_commands(ctx)

    def get_command(self, ctx, cmd_name):
        return self._group.get_command(ctx, cmd_name)


migration_commands = MigrationCommands()
