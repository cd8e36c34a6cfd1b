"""Test mode: each institution's sandbox is a hidden companion institution (`sandbox_of_id`), and every event
says whether it happened in live or test mode (`livemode`).

Revision ID: 0026_sandbox
Revises: 0025_idempotency_keys
"""
import sqlalchemy as sa
from alembic import op

revision = "0026_sandbox"
down_revision = "0025_idempotency_keys"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("institutions") as batch:
        batch.add_column(sa.Column("sandbox_of_id", sa.String(length=32), nullable=True))
        batch.create_foreign_key("fk_institutions_sandbox_of_id_institutions", "institutions", ["sandbox_of_id"], ["id"])
        batch.create_unique_constraint("uq_institutions_sandbox_of_id", ["sandbox_of_id"])
    # A plain ADD COLUMN: a batch copy of `events` on SQLite would drop its trigger that assigns `seq`.
    op.add_column("events", sa.Column("livemode", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade():
    op.drop_column("events", "livemode")
    with op.batch_alter_table("institutions") as batch:
        batch.drop_constraint("uq_institutions_sandbox_of_id", type_="unique")
        batch.drop_constraint("fk_institutions_sandbox_of_id_institutions", type_="foreignkey")
        batch.drop_column("sandbox_of_id")
