"""`Idempotency-Key` on every write: one table of keys per credential (`idempotency_keys`) replaces the
verifications' own (`verification_idempotency`, whose keys were per institution). Its stored answers, at most
24 hours old, are not carried over: a repeat of such a request within a day runs again.

Revision ID: 0025_idempotency_keys
Revises: 0024_sso_sign_in
"""
import sqlalchemy as sa
from alembic import op

revision = "0025_idempotency_keys"
down_revision = "0024_sso_sign_in"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("content_type", sa.String(length=100), nullable=True),
        sa.Column("response_body", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_keys")),
        sa.UniqueConstraint("scope", "idempotency_key", name="uq_idempotency_keys_scope_key"),
    )
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])
    op.drop_index("ix_verification_idempotency_scope_expires", table_name="verification_idempotency")
    op.drop_table("verification_idempotency")


def downgrade():
    op.create_table(
        "verification_idempotency",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_verification_idempotency")),
        sa.UniqueConstraint("scope", "idempotency_key", name="uq_verification_idempotency_scope_key"),
    )
    op.create_index("ix_verification_idempotency_scope_expires", "verification_idempotency",
                    ["scope", "expires_at"])
    op.drop_index("ix_idempotency_keys_created_at", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
