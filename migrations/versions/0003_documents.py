"""Documents and bulk updates.

Revision ID: 0003_documents
Revises: 0002_read_side
"""
from alembic import op  # noqa: F401
import sqlalchemy as sa  # noqa: F401

revision = "0003_documents"
down_revision = "0002_read_side"
branch_labels = None
depends_on = None


def upgrade():
    pass


def downgrade():
    pass
