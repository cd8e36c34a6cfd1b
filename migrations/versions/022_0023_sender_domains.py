"""Institutions' sending domains: each proven in DNS by a TXT record of its own and signed with its own DKIM key
(core/institutions/sender_domains.py).

Revision ID: 0023_sender_domains
Revises: 0022_short_gram_statistics
"""
from alembic import op
import sqlalchemy as sa

revision = "0023_sender_domains"
down_revision = "0022_short_gram_statistics"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "sender_domains",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("institution_id", sa.String(32), sa.ForeignKey("institutions.id"), nullable=False),
        sa.Column("domain", sa.String(253), nullable=False),
        sa.Column("verification_token", sa.String(64), nullable=False),
        sa.Column("dkim_selector", sa.String(63), nullable=False),
        sa.Column("dkim_public_key", sa.Text(), nullable=False),
        sa.Column("dkim_private_key_ciphertext", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verified_at", sa.DateTime(), nullable=True),
        sa.Column("last_checked_at", sa.DateTime(), nullable=True),
        sa.Column("last_problems", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("institution_id", "domain", name="uq_sender_domains_institution_domain"),
    )
    op.create_index("ix_sender_domains_institution_id", "sender_domains", ["institution_id"])


def downgrade():
    op.drop_index("ix_sender_domains_institution_id", table_name="sender_domains")
    op.drop_table("sender_domains")
