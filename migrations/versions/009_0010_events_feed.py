"""Events feed: a commit-safe order for events (`seq`, `xact_id`) and its index.

PostgreSQL: `seq` comes from a sequence and `xact_id` is the writing transaction's id
(`pg_current_xact_id()`), so the feed can show only events of transactions that have ended. SQLite: writes
are serialised, `xact_id` is 0 and a trigger numbers each new event after the highest `seq`.
Existing events are numbered in `occurred_at` order, before any new one.

Revision ID: 0010_events_feed
Revises: 0009_webhook_url_secret
"""
from alembic import op
import sqlalchemy as sa

revision = "0010_events_feed"
down_revision = "0009_webhook_url_secret"
branch_labels = None
depends_on = None

SQLITE_TRIGGER = """
CREATE TRIGGER events_assign_seq AFTER INSERT ON events WHEN NEW.seq IS NULL
BEGIN
    UPDATE events SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM events) WHERE id = NEW.id;
END
"""


def upgrade():
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE SEQUENCE events_seq_seq AS bigint")
        op.add_column("events", sa.Column("seq", sa.BigInteger(), nullable=True))
        op.add_column("events", sa.Column("xact_id", sa.BigInteger(), nullable=True))
        op.execute("UPDATE events SET xact_id = 0, seq = numbered.n FROM ("
                   " SELECT id, row_number() OVER (ORDER BY occurred_at, id) AS n FROM events) AS numbered"
                   " WHERE events.id = numbered.id")
        op.execute("SELECT setval('events_seq_seq', COALESCE((SELECT MAX(seq) FROM events), 0) + 1, false)")
        op.execute("ALTER SEQUENCE events_seq_seq OWNED BY events.seq")
        op.execute("ALTER TABLE events ALTER COLUMN seq SET DEFAULT nextval('events_seq_seq'),"
                   " ALTER COLUMN seq SET NOT NULL,"
                   " ALTER COLUMN xact_id SET DEFAULT (pg_current_xact_id()::text)::bigint,"
                   " ALTER COLUMN xact_id SET NOT NULL")
    else:
        with op.batch_alter_table("events") as batch:
            batch.add_column(sa.Column("seq", sa.BigInteger(), nullable=True))
            batch.add_column(sa.Column("xact_id", sa.BigInteger(), nullable=False, server_default="0"))
        op.execute("UPDATE events SET seq = (SELECT COUNT(*) FROM events AS earlier"
                   " WHERE (earlier.occurred_at, earlier.id) <= (events.occurred_at, events.id))")
        op.execute(SQLITE_TRIGGER)
    op.create_index("uq_events_seq", "events", ["seq"], unique=True)
    op.create_index("ix_events_feed", "events", ["institution_id", "xact_id", "seq"])


def downgrade():
    op.drop_index("ix_events_feed", table_name="events")
    op.drop_index("uq_events_seq", table_name="events")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_column("events", "xact_id")
        op.drop_column("events", "seq")  # drops the sequence it owns
    else:
        op.execute("DROP TRIGGER IF EXISTS events_assign_seq")
        with op.batch_alter_table("events") as batch:
            batch.drop_column("xact_id")
            batch.drop_column("seq")
