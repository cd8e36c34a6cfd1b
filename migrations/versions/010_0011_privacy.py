"""Privacy: erased applicants (data-subject requests) and a free-text detail on audit rows (why it was asked).

Revision ID: 0011_privacy
Revises: 0010_events_feed
"""
from alembic import op
import sqlalchemy as sa

revision = "0011_privacy"
down_revision = "0010_events_feed"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("applicants") as batch:
        batch.add_column(sa.Column("erased_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("audit_log") as batch:
        batch.add_column(sa.Column("detail", sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("detail")
    with op.batch_alter_table("applicants") as batch:
        batch.drop_column("erased_at")
