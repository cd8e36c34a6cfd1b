"""Two-factor sign-in: TOTP credentials and recovery codes of staff, and the institution's rule for admins.

Revision ID: 0013_two_factor
Revises: 0012_staff_accounts
"""
from alembic import op
import sqlalchemy as sa

revision = "0013_two_factor"
down_revision = "0012_staff_accounts"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "two_factor_credentials",
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", name="fk_two_factor_credentials_user_id_users"),
                  nullable=False),
        sa.Column("secret_ciphertext", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("confirmed_at", sa.DateTime(), nullable=True),
        sa.Column("last_used_step", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("user_id", name="pk_two_factor_credentials"),
    )
    op.create_table(
        "two_factor_recovery_codes",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32),
                  sa.ForeignKey("users.id", name="fk_two_factor_recovery_codes_user_id_users"), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_two_factor_recovery_codes"),
    )
    op.create_index("ix_two_factor_recovery_codes_user", "two_factor_recovery_codes", ["user_id", "code_hash"],
                    unique=True)
    with op.batch_alter_table("institutions") as batch:
        batch.add_column(sa.Column("require_admin_two_factor", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("institutions") as batch:
        batch.drop_column("require_admin_two_factor")
    op.drop_index("ix_two_factor_recovery_codes_user", table_name="two_factor_recovery_codes")
    op.drop_table("two_factor_recovery_codes")
    op.drop_table("two_factor_credentials")
