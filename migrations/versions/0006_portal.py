"""Portal.

Revision ID: 0006_portal
Revises: 0005_webhooks
"""
from alembic import op  # noqa: F401
import sqlalchemy as sa  # noqa: F401

revision = "0006_portal"
down_revision = "0005_webhooks"
branch_labels = None
depends_on = None


def upgrade():
    pass


def downgrade():
    pass
