"""Record verification: billing ledger and idempotency.

Revision ID: 0004_verification
Revises: 0002_read_side
"""
from alembic import op
import sqlalchemy as sa

revision = "0004_verification"
down_revision = "0002_read_side"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "verification_charges",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("institution_id", sa.String(length=32), nullable=False),
        sa.Column("api_key_id", sa.String(length=32), nullable=True),
        sa.Column("actor", sa.String(length=100), nullable=False),
        sa.Column("issuer", sa.String(length=16), nullable=False),
        sa.Column("level", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("amount", sa.Numeric(precision=12, scale=2), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("identifiers_hash", sa.String(length=64), nullable=False),
        sa.Column("period", sa.String(length=7), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["institution_id"], ["institutions.id"],
                                name=op.f("fk_verification_charges_institution_id_institutions")),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"],
                                name=op.f("fk_verification_charges_api_key_id_api_keys")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_verification_charges")),
    )
    op.create_index("ix_verification_charges_institution_period", "verification_charges",
                    ["institution_id", "period", "issuer"])
    op.create_index("ix_verification_charges_institution_created", "verification_charges",
                    ["institution_id", "created_at"])
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


def downgrade():
    op.drop_index("ix_verification_idempotency_scope_expires", table_name="verification_idempotency")
    op.drop_table("verification_idempotency")
    op.drop_index("ix_verification_charges_institution_created", table_name="verification_charges")
    op.drop_index("ix_verification_charges_institution_period", table_name="verification_charges")
    op.drop_table("verification_charges")
