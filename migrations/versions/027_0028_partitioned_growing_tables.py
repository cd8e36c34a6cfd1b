"""The growing tables (`audit_log`, `webhook_attempts`, `events`) range-partitioned by month on their time column.

PostgreSQL only (SQLite keeps plain tables: a no-op there). Each table is rebuilt while writes go on, the way
pg_repack does: first, in a transaction of its own, a trigger on the table starts logging every row inserted,
updated or deleted into `<table>__changes`; then a partitioned copy with one partition per month present, the
current month and the next two, and a DEFAULT partition as a net; the rows copied; its primary key (which must
hold the partition column: `(id, <time>)`), indexes and foreign keys built; the logged changes applied to the copy
in batches (per key the latest wins). Then, in one short transaction under a SHARE lock (reads go on, writes wait):
the few changes logged since the last batch applied, the trigger and log dropped and the names swapped, so the
time writes wait does not grow with the table. A table already of the wanted shape is left alone; a run cut short
(or failed: it cleans up) leaves nothing the next run does not drop first. A foreign key cannot
point into a partitioned table by `id` alone, so `webhook_deliveries.event_id → events.id` is dropped here and kept
by the code (retention never drops an event a delivery references). Downgrade rebuilds plain tables the same way
(the trigger then sits on the partitioned table). Figures for 10M audit rows: docs/operations.md, "Partitions".

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
CHANGES_BATCH = 50_000  # changes applied per transaction while writes go on


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
    """Copy `growing` into a table of the other shape while writes go on, the writes meanwhile kept in a change log
    and applied in batches; then apply the last few and swap the names under a short lock. Each table in
    transactions of its own (writes to one never wait for another's copy); on error nothing is left behind."""
    table, column, new = growing.table, growing.column, f"{growing.table}__rebuilt"
    if _is_partitioned(table) == partitioned:
        return
    with op.get_context().autocommit_block():
        _drop_leftovers(table)  # of a run cut short
        try:
            _capture_changes(table, column)  # committed before the copy's snapshot: no write falls between
            op.execute(f"CREATE TABLE {new} (LIKE {table} INCLUDING DEFAULTS INCLUDING STORAGE)"
                       + (f" PARTITION BY RANGE ({column})" if partitioned else ""))
            if partitioned:
                for month in _months(table, column):
                    op.execute(f"CREATE TABLE {table}_p{month[:4]}_{month[5:7]} PARTITION OF {new}"
                               f" FOR VALUES FROM ('{month}') TO (('{month}'::timestamp + interval '1 month'))")
                op.execute(f"CREATE TABLE {table}_default PARTITION OF {new} DEFAULT")
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
            while True:  # the writes made during the copy, while writes go on
                op.execute("BEGIN")
                applied = _apply_changes(table, column, limit=CHANGES_BATCH)
                op.execute("COMMIT")
                if applied < CHANGES_BATCH:
                    break
        except BaseException:
            op.execute("ROLLBACK")  # a no-op outside a transaction
            _drop_leftovers(table)
            raise

        op.execute("BEGIN")
        try:
            op.execute(f"LOCK TABLE {table} IN SHARE MODE")  # from here to COMMIT writes wait; reads go on
            _apply_changes(table, column)  # the few written since the last batch
            op.execute(f"DROP TRIGGER {table}__capture ON {table}")
            op.execute(f"DROP FUNCTION {table}__capture()")
            op.execute(f"DROP TABLE {table}__changes")
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
            _drop_leftovers(table)
            raise
        op.execute("COMMIT")


def _drop_leftovers(table: str) -> None:
    """The change log, its trigger and the copy of a rebuild that did not finish."""
    op.execute(f"DROP TRIGGER IF EXISTS {table}__capture ON {table}")
    op.execute(f"DROP FUNCTION IF EXISTS {table}__capture()")
    op.execute(f"DROP TABLE IF EXISTS {table}__changes")
    op.execute(f"DROP TABLE IF EXISTS {table}__rebuilt")


def _capture_changes(table: str, column: str) -> None:
    """`<table>__changes`: every row inserted, updated or deleted in `table` from now on, in order (`change_seq`),
    kept by a trigger. An update that moves a row to another key logs its old key as deleted first."""
    op.execute(f"CREATE TABLE {table}__changes (LIKE {table})")
    op.execute(f"ALTER TABLE {table}__changes ADD COLUMN change_op text NOT NULL,"
               " ADD COLUMN change_seq bigserial PRIMARY KEY")
    op.execute(f"""CREATE FUNCTION {table}__capture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO {table}__changes SELECT (OLD).*, TG_OP;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND (OLD.id, OLD.{column}) IS DISTINCT FROM (NEW.id, NEW.{column}) THEN
        INSERT INTO {table}__changes SELECT (OLD).*, 'DELETE';
    END IF;
    INSERT INTO {table}__changes SELECT (NEW).*, TG_OP;
    RETURN NULL;
END $$""")
    op.execute(f"CREATE TRIGGER {table}__capture AFTER INSERT OR UPDATE OR DELETE ON {table}"
               f" FOR EACH ROW EXECUTE FUNCTION {table}__capture()")


def _apply_changes(table: str, column: str, limit: int | None = None) -> int:
    """Apply the oldest `limit` (default: all) changes of the log to the copy and take them off the log, in the
    caller's transaction: per key the latest change wins (its row, or none if deleted). Returns how many."""
    columns = ", ".join(op.get_bind().exec_driver_sql(
        f"SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = '{table}'::regclass AND attnum > 0"
        " AND NOT attisdropped ORDER BY attnum").scalars())
    op.execute(f"CREATE TEMPORARY TABLE applying ON COMMIT DROP AS SELECT * FROM {table}__changes WITH NO DATA")
    applied = op.get_bind().exec_driver_sql(
        f"WITH taken AS (DELETE FROM {table}__changes WHERE change_seq IN (SELECT change_seq FROM {table}__changes"
        f" ORDER BY change_seq{f' LIMIT {limit}' if limit else ''}) RETURNING *)"
        " INSERT INTO applying SELECT * FROM taken").rowcount
    op.execute("ANALYZE applying")  # a join through the copy's primary key, never a scan of the copy
    op.execute(f"DELETE FROM {table}__rebuilt AS copy USING applying"
               f" WHERE copy.id = applying.id AND copy.{column} = applying.{column}")
    op.execute(f"INSERT INTO {table}__rebuilt ({columns}) SELECT {columns} FROM ("
               f" SELECT DISTINCT ON (id, {column}) * FROM applying ORDER BY id, {column}, change_seq DESC) AS latest"
               " WHERE change_op <> 'DELETE'")
    return applied


def _months(table: str, column: str) -> list[str]:
    """The first day of every month with rows, of the current month and of the next MONTHS_AHEAD."""
    rows = op.get_bind().exec_driver_sql(
        f"SELECT to_char(month, 'YYYY-MM-DD') FROM ("
        f" SELECT DISTINCT date_trunc('month', {column}) AS month FROM {table}"
        f" UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ahead)"
        f" FROM generate_series(0, {MONTHS_AHEAD}) AS ahead) AS months ORDER BY 1")
    return [row[0] for row in rows]
