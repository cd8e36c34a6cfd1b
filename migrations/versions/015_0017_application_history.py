"""Application history: every change of stage, decision or enrolment, decisions sent and answered, with
who made it (staff user, API credential or the applicant).

Revision ID: 0017_application_history
Revises: 0015_time_zone_language
"""
from alembic import op
import sqlalchemy as sa

revision = "0017_application_history"
down_revision = "0015_time_zone_language"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "application_history",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("institution_id", sa.String(32), sa.ForeignKey("institutions.id"), nullable=False),
        sa.Column("application_id", sa.String(32), sa.ForeignKey("applications.id"), nullable=False),
        sa.Column("changed_at", sa.DateTime(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("old_value", sa.String(64), nullable=True),
        sa.Column("new_value", sa.String(64), nullable=True),
        sa.Column("decision_id", sa.String(32), nullable=True),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_name", sa.String(100), nullable=False),
    )
    op.create_index("ix_application_history_institution_application", "application_history",
                    ["institution_id", "application_id", "changed_at"])


def downgrade():
    op.drop_index("ix_application_history_institution_application", table_name="application_history")
    op.drop_table("application_history")
