"""Webhooks: endpoints, deliveries and attempts.

Revision ID: 0005_webhooks
Revises: 0004_verification
"""
from alembic import op  # noqa: F401
import sqlalchemy as sa  # noqa: F401

revision = "0005_webhooks"
down_revision = "0004_verification"
branch_labels = None
depends_on = None


def upgrade():
    pass


def downgrade():
    pass
