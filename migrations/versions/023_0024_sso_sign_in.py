"""Staff sign-in with the university's account: each institution's OpenID Connect provider, the email domains
that lead to it (a domain belongs to one institution: the primary key), and the spent `state` values.

Revision ID: 0024_sso_sign_in
Revises: 0023_sender_domains
"""
import sqlalchemy as sa
from alembic import op

revision = "0024_sso_sign_in"
down_revision = "0023_sender_domains"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "sso_configurations",
        sa.Column("institution_id", sa.String(length=32), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("client_secret_ciphertext", sa.Text(), nullable=False),
        sa.Column("require_sso", sa.Boolean(), nullable=False),
        sa.Column("create_users", sa.String(length=8), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["institution_id"], ["institutions.id"]),
        sa.PrimaryKeyConstraint("institution_id"),
    )
    op.create_table(
        "sso_domains",
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("institution_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["institution_id"], ["institutions.id"]),
        sa.PrimaryKeyConstraint("domain"),
    )
    op.create_index("ix_sso_domains_institution", "sso_domains", ["institution_id"])
    op.create_table(
        "sso_spent_states",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("spent_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("state_hash"),
    )
    op.create_index("ix_sso_spent_states_spent_at", "sso_spent_states", ["spent_at"])


def downgrade():
    op.drop_index("ix_sso_spent_states_spent_at", table_name="sso_spent_states")
    op.drop_table("sso_spent_states")
    op.drop_index("ix_sso_domains_institution", table_name="sso_domains")
    op.drop_table("sso_domains")
    op.drop_table("sso_configurations")
