"""Read side: search indexes.

Revision ID: 0002_read_side
Revises: 0001_foundation
"""
from alembic import op  # noqa: F401
import sqlalchemy as sa  # noqa: F401

revision = "0002_read_side"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None


def upgrade():
    pass


def downgrade():
    pass
