"""Record verification: billing ledger and idempotency.

Revision ID: 0004_verification
Revises: 0003_documents
"""
from alembic import op  # noqa: F401
import sqlalchemy as sa  # noqa: F401

revision = "0004_verification"
down_revision = "0003_documents"
branch_labels = None
depends_on = None


def upgrade():
    pass


def downgrade():
    pass
