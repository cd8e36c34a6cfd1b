"""The models (`core/models`) and the schema the migrations build agree.

A new database of the suite's kind (SQLite or PostgreSQL) is brought to head by `flask db upgrade`, then compared
with the models by Alembic's autogenerate (`compare_metadata`), run through `migrations/env.py` as `flask db
migrate` runs it: its target metadata (the models', with their naming convention), Flask-Migrate's options
(`compare_type`), any `include_object`/`include_name` it or the app configure, and server defaults compared too.
Nothing is written: the run uses a copy of the migrations folder and keeps the revision it would have written.

Every difference must be listed in INTENTIONAL with its reason. Anything else fails with a readable diff: if the
models and the migrations disagree, the side that is wrong is fixed (usually the model's declaration: the
databases in production were made by the migrations). An intentional entry that no longer occurs fails too, so
the list stays true. Not compared by Alembic, so not covered here: triggers, sequences, CHECK constraints and the
predicate of partial indexes.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from alembic import command

from core.db import db
from tests.conftest import app_config
from tests.ops.test_migrations import ROOT, empty_database, flask_command
from wsgi import create_app

MIGRATIONS = Path(ROOT) / "migrations"

# (dialect, kind of difference, table, column or index) → why the database and the models differ on purpose.
INTENTIONAL = {
    # The events feed numbers SQLite events with an AFTER INSERT trigger (migration 0010_events_feed): the row
    # is inserted without `seq`, so the column must accept NULL there. PostgreSQL fills it from a sequence and
    # has it NOT NULL, as the model declares.
    ("sqlite", "modify_nullable", "events", "seq"):
        "SQLite's events_assign_seq trigger sets seq after the insert, so the column is nullable there",
    # A GIN trigram index (pg_trgm) for substring search, on the applications' copy of their applicant's text
    # (migrations 0002_read_side, 0021_search_text_on_applications). It exists only on PostgreSQL; SQLite has
    # neither the extension nor GIN, and its search scans. The models declare only the indexes both databases
    # have.
    ("postgresql", "remove_index", "applications", "ix_applications_search_text_trgm"):
        "PostgreSQL-only trigram index for substring search, created by migration 0021_search_text_on_applications",
    # Its companion for short texts (migration 0020_short_search_grams, moved by 0021): a GIN index on the
    # short_text_grams() of the same text, a PL/pgSQL function SQLite does not have.
    ("postgresql", "remove_index", "applications", "ix_applications_search_text_short_grams"):
        "PostgreSQL-only short-gram index for short search texts, created by migration 0021_search_text_on_applications",
    # Migration 0027_application_reference adds the reference to existing rows; making it NOT NULL on SQLite
    # would copy the table and drop its triggers, so only PostgreSQL enforces it.
    ("sqlite", "modify_nullable", "applications", "reference"):
        "SQLite cannot set NOT NULL without rebuilding applications (and losing its triggers)",
    # Migration 0028_partitioned_growing_tables: on PostgreSQL events is partitioned by month, so no foreign key can
    # point at events.id alone (retention keeps every event a delivery references), and a unique index must hold the
    # partition column. The primary keys (id, time column) are not compared by Alembic.
    ("postgresql", "add_fk", "webhook_deliveries", "fk_webhook_deliveries_event_id_events"):
        "events is partitioned on PostgreSQL: a foreign key cannot reference events.id alone",
    ("postgresql", "remove_index", "events", "uq_events_seq"):
        "events is partitioned on PostgreSQL: the unique index on seq holds occurred_at too",
    ("postgresql", "add_index", "events", "uq_events_seq"):
        "events is partitioned on PostgreSQL: the unique index on seq holds occurred_at too",
}


def _flatten(diffs):
    """Alembic groups the changes of one column in a list; one entry per change."""
    for diff in diffs:
        if isinstance(diff, list):
            yield from diff
        else:
            yield diff


def _key_and_description(dialect: str, diff: tuple) -> tuple[tuple, str]:
    kind = diff[0]
    if kind in ("add_table", "remove_table"):
        table = diff[1]
        key, what = table.name, f"table {table.name}"
    elif kind in ("add_index", "remove_index"):
        index = diff[1]
        columns = ", ".join(str(expression) for expression in index.expressions)
        key = (index.table.name, index.name)
        what = f"{'unique ' if index.unique else ''}index {index.name} on {index.table.name} ({columns})"
    elif kind in ("add_column", "remove_column"):
        key, what = (diff[2], diff[3].name), f"column {diff[2]}.{diff[3].name} {diff[3].type}"
    elif kind.startswith("modify_"):
        _, _, table, column, _, in_database, in_models = diff
        key = (table, column)
        what = f"{table}.{column} {kind[len('modify_'):]}: {in_database!r} in the database, {in_models!r} in the models"
    elif kind in ("add_fk", "remove_fk", "add_constraint", "remove_constraint"):
        constraint = diff[1]
        key = (constraint.table.name, constraint.name)
        what = f"{type(constraint).__name__} {constraint.name} on {constraint.table.name}"
    else:
        key, what = (repr(diff[1:]),), repr(diff[1:])
    key = (dialect, kind, *(key if isinstance(key, tuple) else (key,)))
    side = {"add": "in the models only", "remove": "in the database only"}.get(kind.split("_")[0], "differs")
    return key, f"{dialect} {kind}: {what} ({side})"


def _autogenerate_diffs(app, tmp_path) -> list:
    """What `flask db migrate` would put in a new revision, as Alembic's diff tuples (nothing is written)."""
    directory = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, directory, ignore=shutil.ignore_patterns("__pycache__"))
    found = []

    def keep_and_write_nothing(context, revision, directives):
        found.extend(directives[0].upgrade_ops.as_diffs())
        directives[:] = []

    with app.app_context():
        app.extensions["migrate"].configure_args  # the stand-in (core.db.DeferredMigrate) binds Flask-Migrate
        migrate = app.extensions["migrate"]
        # env.py passes these to Alembic's context.configure, and uses its own directive hook only when none is set.
        migrate.configure_args.update(process_revision_directives=keep_and_write_nothing, compare_server_default=True)
        config = migrate.migrate.get_config(str(directory), opts=["autogenerate"])
        command.revision(config, message="models against migrations", autogenerate=True, rev_id="comparison")
        db.engine.dispose()
    assert sorted(path.name for path in (directory / "versions").glob("*.py")) == \
        sorted(path.name for path in (MIGRATIONS / "versions").glob("*.py")), "a revision file was written"
    return found


def test_the_models_and_the_migrated_schema_agree(tmp_path):
    with empty_database(tmp_path) as url:
        upgraded = flask_command(url, "db", "upgrade")
        assert upgraded.returncode == 0, upgraded.stderr
        app = create_app(app_config(url, tmp_path / "documents"))
        with app.app_context():
            dialect = db.engine.dialect.name
        diffs = [_key_and_description(dialect, diff) for diff in _flatten(_autogenerate_diffs(app, tmp_path))]

    unexpected = sorted(description for key, description in diffs if key not in INTENTIONAL)
    expected_here = {key for key in INTENTIONAL if key[0] == dialect}
    gone = sorted(" ".join(key) + f" ({INTENTIONAL[key]})" for key in expected_here - {key for key, _ in diffs})
    assert not unexpected, ("the models and the migrated schema differ (fix the wrong side, or list the difference "
                            "in INTENTIONAL with its reason):\n" + "\n".join(unexpected))
    assert not gone, "listed as intentional but no longer found (remove from INTENTIONAL):\n" + "\n".join(gone)
