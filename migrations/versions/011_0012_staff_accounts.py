"""Staff accounts: email unique per institution (not globally), invitations, password resets, sessions.

Revision ID: 0012_staff_accounts
Revises: 0011_privacy
"""
from alembic import op
import sqlalchemy as sa

revision = "0012_staff_accounts"
down_revision = "0011_privacy"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("users") as batch:
        batch.drop_constraint("uq_users_email", type_="unique")
        batch.create_unique_constraint("uq_users_institution_email", ["institution_id", "email"])
        batch.create_index("ix_users_email", ["email"], unique=False)

    op.create_table(
        "staff_invitations",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("institution_id", sa.String(32), nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("invited_by", sa.String(32), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("accepted_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["institution_id"], ["institutions.id"],
                                name="fk_staff_invitations_institution_id_institutions"),
        sa.ForeignKeyConstraint(["invited_by"], ["users.id"], name="fk_staff_invitations_invited_by_users"),
        sa.PrimaryKeyConstraint("id", name="pk_staff_invitations"),
        sa.UniqueConstraint("institution_id", "email", name="uq_staff_invitations_institution_email"),
        sa.UniqueConstraint("token_hash", name="uq_staff_invitations_token_hash"),
    )
    op.create_table(
        "password_resets",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_password_resets_user_id_users"),
        sa.PrimaryKeyConstraint("id", name="pk_password_resets"),
        sa.UniqueConstraint("token_hash", name="uq_password_resets_token_hash"),
    )
    op.create_index("ix_password_resets_user", "password_resets", ["user_id"])
    op.create_table(
        "staff_sessions",
        sa.Column("id", sa.String(48), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("user_agent", sa.String(300), nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("ended_reason", sa.String(32), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_staff_sessions_user_id_users"),
        sa.PrimaryKeyConstraint("id", name="pk_staff_sessions"),
    )
    op.create_index("ix_staff_sessions_user_ended", "staff_sessions", ["user_id", "ended_at"])


def downgrade():
    op.drop_index("ix_staff_sessions_user_ended", table_name="staff_sessions")
    op.drop_table("staff_sessions")
    op.drop_index("ix_password_resets_user", table_name="password_resets")
    op.drop_table("password_resets")
    op.drop_table("staff_invitations")
    with op.batch_alter_table("users") as batch:
        batch.drop_index("ix_users_email")
        batch.drop_constraint("uq_users_institution_email", type_="unique")
        batch.create_unique_constraint("uq_users_email", ["email"])
