"""Messages: the outbox of emails and SMS to applicants, and the languages they read.

Revision ID: 0008_messages
Revises: 0007_application_counts
"""
from alembic import op
import sqlalchemy as sa

revision = "0008_messages"
down_revision = "0007_application_counts"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("institutions") as batch:
        batch.add_column(sa.Column("default_language", sa.String(length=8), nullable=False, server_default="en"))
    with op.batch_alter_table("applicants") as batch:
        batch.add_column(sa.Column("language", sa.String(length=8), nullable=True))
    op.create_table(
        "messages",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("institution_id", sa.String(length=32), nullable=False),
        sa.Column("application_id", sa.String(length=32), nullable=True),
        sa.Column("decision_id", sa.String(length=32), nullable=True),
        sa.Column("channel", sa.String(length=8), nullable=False),
        sa.Column("recipient", sa.String(length=254), nullable=False),
        sa.Column("recipient_name", sa.String(length=200), nullable=False),
        sa.Column("template", sa.String(length=64), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("body_text", sa.Text(), nullable=False),
        sa.Column("body_html", sa.Text(), nullable=True),
        sa.Column("message_id_header", sa.String(length=255), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=True),
        sa.Column("lease_token", sa.String(length=32), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("provider_id", sa.String(length=255), nullable=True),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["institution_id"], ["institutions.id"],
                                name=op.f("fk_messages_institution_id_institutions")),
        sa.ForeignKeyConstraint(["application_id"], ["applications.id"],
                                name=op.f("fk_messages_application_id_applications")),
        sa.ForeignKeyConstraint(["decision_id"], ["decisions.id"], name=op.f("fk_messages_decision_id_decisions")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint("decision_id", "channel", name="uq_messages_decision_channel"),
    )
    op.create_index("ix_messages_institution_created", "messages", ["institution_id", "created_at", "id"])
    op.create_index("ix_messages_status_next", "messages", ["status", "next_attempt_at"])
    op.create_index("ix_messages_application_created", "messages", ["application_id", "created_at"])


def downgrade():
    op.drop_index("ix_messages_application_created", table_name="messages")
    op.drop_index("ix_messages_status_next", table_name="messages")
    op.drop_index("ix_messages_institution_created", table_name="messages")
    op.drop_table("messages")
    with op.batch_alter_table("applicants") as batch:
        batch.drop_column("language")
    with op.batch_alter_table("institutions") as batch:
        batch.drop_column("default_language")
