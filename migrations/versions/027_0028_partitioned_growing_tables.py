"""The growing tables (`audit_log`, `webhook_attempts`, `events`) range-partitioned by month on their time column.

PostgreSQL only (SQLite keeps plain tables: a no-op there). Each table is rebuilt in two steps. While writes go
on: a partitioned copy with one partition per month present, the current month and the next two, and a DEFAULT
partition as a net; the rows copied; its primary key (which must hold the partition column: `(id, <time>)`),
indexes and foreign keys built. Then, in one short transaction under a SHARE lock (reads go on, writes wait): the
rows written or changed since the copy began (their `xmin` not older than the copy's snapshot) copied again, and
the names swapped. A table already of the wanted shape is left alone, so a run cut short can be run again. A foreign key cannot
point into a partitioned table by `id` alone, so `webhook_deliveries.event_id → events.id` is dropped here and kept
by the code (retention never drops an event a delivery references). Downgrade rebuilds plain tables the same way.
Figures for 10M audit rows: docs/operations.md, "Partitions".

Revision ID: 0028_partitioned_growing_tables
Revises: 0027_application_reference
"""
from dataclasses import dataclass

from alembic import op

revision = "0028_partitioned_growing_tables"
down_revision = "0027_application_reference"
branch_labels = None
depends_on = None

MONTHS_AHEAD = 2
EVENT_FOREIGN_KEY = "fk_webhook_deliveries_event_id_events"


@dataclass(frozen=True)
class Growing:
    table: str
    column: str  # the time column partitioned on
    indexes: tuple[tuple[str, str], ...]  # (name, columns), the same on both shapes
    foreign_keys: tuple[tuple[str, str], ...] = ()  # (name, definition)
    sequences: tuple[tuple[str, str], ...] = ()  # (sequence, column) owned by the table
    # The unique index on a sequence-numbered column: its partitioned form holds the partition column too.
    unique: tuple[str, str] | None = None  # (name, column)


TABLES = (
    Growing("audit_log", "created_at", (("ix_audit_log_institution_created", "institution_id, created_at"),),
            sequences=(("audit_log_id_seq", "id"),)),
    Growing("webhook_attempts", "attempted_at", (("ix_webhook_attempts_delivery_id", "delivery_id"),),
            foreign_keys=(("fk_webhook_attempts_delivery_id_webhook_deliveries",
                           "FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id)"),)),
    Growing("events", "occurred_at",
            (("ix_events_feed", "institution_id, xact_id, seq"),
             ("ix_events_institution_occurred", "institution_id, occurred_at"),
             ("ix_events_subject_id", "subject_id")),
            foreign_keys=(("fk_events_institution_id_institutions",
                           "FOREIGN KEY (institution_id) REFERENCES institutions (id)"),),
            sequences=(("events_seq_seq", "seq"),),
            unique=("uq_events_seq", "seq")),
)


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    for growing in TABLES:
        _rebuild(growing, partitioned=True)


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    for growing in reversed(TABLES):
        _rebuild(growing, partitioned=False)
    op.execute(f"ALTER TABLE webhook_deliveries ADD CONSTRAINT {EVENT_FOREIGN_KEY}"
               " FOREIGN KEY (event_id) REFERENCES events (id)")


def _is_partitioned(table: str) -> bool:
    return bool(op.get_bind().exec_driver_sql(
        f"SELECT count(*) FROM pg_partitioned_table WHERE partrelid = '{table}'::regclass").scalar())


def _rebuild(growing: Growing, *, partitioned: bool) -> None:
    """Copy `growing` into a table of the other shape while writes go on, then catch up and swap the names under a
    short lock; each table in transactions of its own (writes to one never wait for another's copy)."""
    table, column, new = growing.table, growing.column, f"{growing.table}__rebuilt"
    if _is_partitioned(table) == partitioned:
        return
    with op.get_context().autocommit_block():
        op.execute(f"DROP TABLE IF EXISTS {new}")  # left by a run cut short
        op.execute(f"CREATE TABLE {new} (LIKE {table} INCLUDING DEFAULTS INCLUDING STORAGE)"
                   + (f" PARTITION BY RANGE ({column})" if partitioned else ""))
        if partitioned:
            for month in _months(table, column):
                op.execute(f"CREATE TABLE {table}_p{month[:4]}_{month[5:7]} PARTITION OF {new}"
                           f" FOR VALUES FROM ('{month}') TO (('{month}'::timestamp + interval '1 month'))")
            op.execute(f"CREATE TABLE {table}_default PARTITION OF {new} DEFAULT")
        snapshot = op.get_bind().exec_driver_sql("SELECT pg_current_snapshot()::text").scalar()
        op.execute(f"INSERT INTO {new} SELECT * FROM {table}")
        key = f"id, {column}" if partitioned else "id"
        op.execute(f"ALTER TABLE {new} ADD CONSTRAINT pk_{table}__rebuilt PRIMARY KEY ({key})")
        for name, columns in growing.indexes:
            op.execute(f"CREATE INDEX {name}__rebuilt ON {new} ({columns})")
        if growing.unique:
            name, unique_column = growing.unique
            op.execute(f"CREATE UNIQUE INDEX {name}__rebuilt ON {new}"
                       f" ({unique_column}{f', {column}' if partitioned else ''})")
        for name, definition in growing.foreign_keys:
            op.execute(f"ALTER TABLE {new} ADD CONSTRAINT {name} {definition}")

        op.execute("BEGIN")
        try:
            op.execute(f"LOCK TABLE {table} IN SHARE MODE")  # from here to COMMIT writes wait; reads go on
            # Rows written or changed since the copy's snapshot: their xmin is not older than its oldest transaction.
            # age() counts from this transaction's id (given here); frozen rows have the greatest age.
            current = op.get_bind().exec_driver_sql("SELECT pg_current_xact_id()::text::bigint").scalar()
            op.execute(f"CREATE TEMPORARY TABLE caught ON COMMIT DROP AS SELECT * FROM {table}"
                       f" WHERE age(xmin) <= {current} - pg_snapshot_xmin('{snapshot}'::pg_snapshot)::text::bigint")
            op.execute(f"DELETE FROM {new} USING caught WHERE {new}.id = caught.id AND {new}.{column} = caught.{column}")
            op.execute(f"INSERT INTO {new} SELECT * FROM caught")
            for sequence, owner in growing.sequences:
                op.execute(f"ALTER SEQUENCE {sequence} OWNED BY {new}.{owner}")
            if table == "events":
                op.execute(f"ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS {EVENT_FOREIGN_KEY}")
            op.execute(f"DROP TABLE {table}")
            op.execute(f"ALTER TABLE {new} RENAME TO {table}")
            op.execute(f"ALTER TABLE {table} RENAME CONSTRAINT pk_{table}__rebuilt TO pk_{table}")
            for name in [name for name, _ in growing.indexes] + ([growing.unique[0]] if growing.unique else []):
                op.execute(f"ALTER INDEX {name}__rebuilt RENAME TO {name}")
        except BaseException:
            op.execute("ROLLBACK")  # nothing half-swapped
            raise
        op.execute("COMMIT")


def _months(table: str, column: str) -> list[str]:
    """The first day of every month with rows, of the current month and of the next MONTHS_AHEAD."""
    rows = op.get_bind().exec_driver_sql(
        f"SELECT to_char(month, 'YYYY-MM-DD') FROM ("
        f" SELECT DISTINCT date_trunc('month', {column}) AS month FROM {table}"
        f" UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ahead)"
        f" FROM generate_series(0, {MONTHS_AHEAD}) AS ahead) AS months ORDER BY 1")
    return [row[0] for row in rows]
