"""Portal: credential checks run by staff for an application.

Revision ID: 0006_portal
Revises: 0005_webhooks
"""
from alembic import op
import sqlalchemy as sa

revision = "0006_portal"
down_revision = "0005_webhooks"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "applicant_checks",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("institution_id", sa.String(length=32), nullable=False),
        sa.Column("application_id", sa.String(length=32), nullable=False),
        sa.Column("issuer", sa.String(length=16), nullable=False),
        sa.Column("level", sa.String(length=16), nullable=False),
        sa.Column("result", sa.String(length=16), nullable=False),
        sa.Column("reference", sa.String(length=64), nullable=True),
        sa.Column("candidate_name", sa.String(length=200), nullable=True),
        sa.Column("actor", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["institution_id"], ["institutions.id"],
                                name=op.f("fk_applicant_checks_institution_id_institutions")),
        sa.ForeignKeyConstraint(["application_id"], ["applications.id"],
                                name=op.f("fk_applicant_checks_application_id_applications")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_applicant_checks")),
    )
    op.create_index("ix_applicant_checks_application", "applicant_checks", ["application_id", "created_at"])


def downgrade():
    op.drop_index("ix_applicant_checks_application", table_name="applicant_checks")
    op.drop_table("applicant_checks")
