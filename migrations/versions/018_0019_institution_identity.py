"""The institution's identity for applicants (name, logo, colour, contact, website, footer) and each email's
own From and Reply-To.

Revision ID: 0019_institution_identity
Revises: 0018_erased_applicants
"""
from alembic import op
import sqlalchemy as sa

revision = "0019_institution_identity"
down_revision = "0018_erased_applicants"
branch_labels = None
depends_on = None

_INSTITUTION_COLUMNS = (
    ("display_name", sa.String(200)),
    ("brand_colour", sa.String(7)),
    ("contact_email", sa.String(254)),
    ("website", sa.String(300)),
    ("footer", sa.String(300)),
    ("logo", sa.LargeBinary()),
    ("logo_type", sa.String(16)),
    ("logo_digest", sa.String(16)),
)


def upgrade():
    with op.batch_alter_table("institutions") as table:
        for name, type_ in _INSTITUTION_COLUMNS:
            table.add_column(sa.Column(name, type_, nullable=True))
    with op.batch_alter_table("messages") as table:
        table.add_column(sa.Column("sender", sa.String(300), nullable=True))
        table.add_column(sa.Column("reply_to", sa.String(254), nullable=True))


def downgrade():
    with op.batch_alter_table("messages") as table:
        table.drop_column("reply_to")
        table.drop_column("sender")
    with op.batch_alter_table("institutions") as table:
        for name, _ in reversed(_INSTITUTION_COLUMNS):
            table.drop_column(name)
