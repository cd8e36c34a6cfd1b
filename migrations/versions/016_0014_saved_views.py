"""The applicant list: saved views per user, bulk changes of a whole filtered set, and the indexes that keep
every sort of the list a keyset walk (first and deep pages cost the same).

Revision ID: 0014_saved_views
Revises: 0017_application_history

- `ix_applications_inst_stage_submitted`: sort by stage (one range per stage, newest submission first).
- `ix_applicants_inst_search_text`: sort by name (the folded "first last email" text of the applicant).
  Sort by submission and by last update use the existing (institution, submitted_at | updated_at, id) indexes.
"""
from alembic import op
import sqlalchemy as sa

revision = "0014_saved_views"
down_revision = "0017_application_history"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "saved_views",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("institution_id", sa.String(32), sa.ForeignKey("institutions.id"), nullable=False),
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("user_id", "name", name="uq_saved_views_user_name"),
    )
    op.create_index("ix_saved_views_user_id", "saved_views", ["user_id"])
    op.create_table(
        "bulk_changes",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("institution_id", sa.String(32), sa.ForeignKey("institutions.id"), nullable=False),
        sa.Column("actor", sa.String(254), nullable=False),
        sa.Column("filters", sa.JSON(), nullable=False),
        sa.Column("change", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("changed", sa.Integer(), nullable=False),
        sa.Column("refused", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_bulk_changes_institution_created", "bulk_changes", ["institution_id", "created_at"])
    op.create_index("ix_applications_inst_stage_submitted", "applications",
                    ["institution_id", "stage", "submitted_at", "id"])
    op.create_index("ix_applicants_inst_search_text", "applicants", ["institution_id", "search_text", "id"])


def downgrade():
    op.drop_index("ix_applicants_inst_search_text", table_name="applicants")
    op.drop_index("ix_applications_inst_stage_submitted", table_name="applications")
    op.drop_index("ix_bulk_changes_institution_created", table_name="bulk_changes")
    op.drop_table("bulk_changes")
    op.drop_index("ix_saved_views_user_id", table_name="saved_views")
    op.drop_table("saved_views")
