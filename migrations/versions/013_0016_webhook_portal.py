"""Webhook portal: the request and response headers of every attempt, and events sent as tests.

Revision ID: 0016_webhook_portal
Revises: 0013_two_factor
"""
from alembic import op
import sqlalchemy as sa

revision = "0016_webhook_portal"
down_revision = "0013_two_factor"
branch_labels = None
depends_on = None

# Rebuilding `events` on SQLite (dropping a column) drops its trigger; see 0010_events_feed.
SQLITE_TRIGGER = """
CREATE TRIGGER events_assign_seq AFTER INSERT ON events WHEN NEW.seq IS NULL
BEGIN
    UPDATE events SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM events) WHERE id = NEW.id;
END
"""


def upgrade():
    # Nullable columns without a default: a catalogue change on PostgreSQL, ALTER TABLE ADD COLUMN on SQLite.
    op.add_column("webhook_attempts", sa.Column("request_headers", sa.JSON(), nullable=True))
    op.add_column("webhook_attempts", sa.Column("response_headers", sa.JSON(), nullable=True))
    op.add_column("events", sa.Column("is_test", sa.Boolean(), nullable=True))


def downgrade():
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        op.execute("DROP TRIGGER IF EXISTS events_assign_seq")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("is_test")
    if sqlite:
        op.execute(SQLITE_TRIGGER)
    with op.batch_alter_table("webhook_attempts") as batch:
        batch.drop_column("response_headers")
        batch.drop_column("request_headers")
