"""The growing tables (`audit_log`, `webhook_attempts`, `events`) range-partitioned by month on their time column.

PostgreSQL only (SQLite keeps plain tables: a no-op there). Each table is rebuilt under a SHARE lock (reads go on,
writes wait until the migration commits): a partitioned copy with one partition per month present, the current
month and the next two, and a DEFAULT partition as a net; the rows copied; the names swapped; the primary key
(which must hold the partition column: `(id, <time>)`), indexes and foreign keys recreated. A foreign key cannot
point into a partitioned table by `id` alone, so `webhook_deliveries.event_id → events.id` is dropped here and kept
by the code (retention never drops an event a delivery references). Downgrade rebuilds plain tables the same way.
Figures for 10M audit rows: docs/operations.md, "Partitions".

Revision ID: 0028_partitioned_growing_tables
Revises: 0024_sso_sign_in
"""
from dataclasses import dataclass

from alembic import op

revision = "0028_partitioned_growing_tables"
down_revision = "0024_sso_sign_in"
branch_labels = None
depends_on = None

MONTHS_AHEAD = 2
EVENT_FOREIGN_KEY = ("fk_webhook_deliveries_event_id_events",
                     "ALTER TABLE webhook_deliveries ADD CONSTRAINT fk_webhook_deliveries_event_id_events"
                     " FOREIGN KEY (event_id) REFERENCES events (id)")


@dataclass(frozen=True)
class Growing:
    table: str
    column: str  # the time column partitioned on
    indexes: tuple[str, ...]  # CREATE INDEX statements, the same on both shapes
    foreign_keys: tuple[str, ...] = ()
    sequences: tuple[tuple[str, str], ...] = ()  # (sequence, column) owned by the table
    plain_unique: tuple[str, ...] = ()  # unique indexes of the plain table
    partitioned_unique: tuple[str, ...] = ()  # ... and their partitioned form (the partition column added)


TABLES = (
    Growing("audit_log", "created_at",
            ("CREATE INDEX ix_audit_log_institution_created ON audit_log (institution_id, created_at)",),
            sequences=(("audit_log_id_seq", "id"),)),
    Growing("webhook_attempts", "attempted_at",
            ("CREATE INDEX ix_webhook_attempts_delivery_id ON webhook_attempts (delivery_id)",),
            foreign_keys=("ALTER TABLE webhook_attempts ADD CONSTRAINT fk_webhook_attempts_delivery_id_webhook_deliveries"
                          " FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id)",)),
    Growing("events", "occurred_at",
            ("CREATE INDEX ix_events_feed ON events (institution_id, xact_id, seq)",
             "CREATE INDEX ix_events_institution_occurred ON events (institution_id, occurred_at)",
             "CREATE INDEX ix_events_subject_id ON events (subject_id)"),
            foreign_keys=("ALTER TABLE events ADD CONSTRAINT fk_events_institution_id_institutions"
                          " FOREIGN KEY (institution_id) REFERENCES institutions (id)",),
            sequences=(("events_seq_seq", "seq"),),
            plain_unique=("CREATE UNIQUE INDEX uq_events_seq ON events (seq)",),
            # `seq` comes from a sequence; unique per partition with the partition column, as PostgreSQL requires.
            partitioned_unique=("CREATE UNIQUE INDEX uq_events_seq ON events (seq, occurred_at)",)),
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
    op.execute(EVENT_FOREIGN_KEY[1])


def _rebuild(growing: Growing, *, partitioned: bool) -> None:
    """Copy `growing` into a table of the other shape, swap the names and recreate keys and indexes."""
    table, column, new = growing.table, growing.column, f"{growing.table}__rebuilt"
    op.execute(f"LOCK TABLE {table} IN SHARE MODE")  # no write is lost between the copy and the swap
    op.execute(f"CREATE TABLE {new} (LIKE {table} INCLUDING DEFAULTS INCLUDING STORAGE)"
               + (f" PARTITION BY RANGE ({column})" if partitioned else ""))
    if partitioned:
        for month in _months(table, column):
            op.execute(f"CREATE TABLE {table}_p{month[:4]}_{month[5:7]} PARTITION OF {new}"
                       f" FOR VALUES FROM ('{month}') TO (('{month}'::timestamp + interval '1 month'))")
        op.execute(f"CREATE TABLE {table}_default PARTITION OF {new} DEFAULT")
    op.execute(f"INSERT INTO {new} SELECT * FROM {table}")
    for sequence, owner in growing.sequences:
        op.execute(f"ALTER SEQUENCE {sequence} OWNED BY {new}.{owner}")
    if table == "events":
        op.execute(f"ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS {EVENT_FOREIGN_KEY[0]}")
    op.execute(f"DROP TABLE {table}")
    op.execute(f"ALTER TABLE {new} RENAME TO {table}")
    key = f"id, {column}" if partitioned else "id"
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY ({key})")
    for statement in (*growing.indexes, *(growing.partitioned_unique if partitioned else growing.plain_unique),
                      *growing.foreign_keys):
        op.execute(statement)


def _months(table: str, column: str) -> list[str]:
    """The first day of every month with rows, of the current month and of the next MONTHS_AHEAD."""
    rows = op.get_bind().exec_driver_sql(
        f"SELECT to_char(month, 'YYYY-MM-DD') FROM ("
        f" SELECT DISTINCT date_trunc('month', {column}) AS month FROM {table}"
        f" UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ahead)"
        f" FROM generate_series(0, {MONTHS_AHEAD}) AS ahead) AS months ORDER BY 1")
    return [row[0] for row in rows]
