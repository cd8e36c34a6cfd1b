"""Time and language: an institution's time zone for displayed times, a staff member's portal language.

Both are nullable: an institution without a chosen zone shows times in the zone of its country (derived from
its programs' currency, see core.institutions.time_zone_of); a user without a language sees English.

Revision ID: 0015_time_zone_language
Revises: 0016_webhook_portal
"""
from alembic import op
import sqlalchemy as sa

revision = "0015_time_zone_language"
down_revision = "0016_webhook_portal"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("institutions") as batch:
        batch.add_column(sa.Column("time_zone", sa.String(length=64), nullable=True))
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("language", sa.String(length=8), nullable=True))


def downgrade():
    with op.batch_alter_table("users") as batch:
        batch.drop_column("language")
    with op.batch_alter_table("institutions") as batch:
        batch.drop_column("time_zone")
