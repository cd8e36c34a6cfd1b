"""Each application's human reference (`DU-2026-4KX7P`: the institution's initials, the year, five Crockford
base32 characters), drawn for the existing rows here and unique across institutions.

Revision ID: 0027_application_reference
Revises: 0026_sandbox
"""
import sqlalchemy as sa
from alembic import op

revision = "0027_application_reference"
down_revision = "0026_sandbox"
branch_labels = None
depends_on = None

BATCH = 5000


def _backfill(connection) -> None:
    """A distinct reference for every existing application, written in batches."""
    from core.applications.references import candidate_reference, institution_prefix

    rows = connection.execute(sa.text(
        "SELECT applications.id, COALESCE(institutions.display_name, institutions.name), "
        "applications.submitted_at FROM applications "
        "JOIN institutions ON institutions.id = applications.institution_id ORDER BY applications.id")).all()
    taken: set[str] = set()
    updates = []
    for application_id, name, submitted_at in rows:
        year = submitted_at.year if hasattr(submitted_at, "year") else int(str(submitted_at)[:4])
        reference = candidate_reference(institution_prefix(name), year)
        while reference in taken:
            reference = candidate_reference(institution_prefix(name), year)
        taken.add(reference)
        updates.append({"id": application_id, "reference": reference})
    statement = sa.text("UPDATE applications SET reference = :reference WHERE id = :id")
    for start in range(0, len(updates), BATCH):
        connection.execute(statement, updates[start:start + BATCH])


def upgrade():
    op.add_column("applications", sa.Column("reference", sa.String(length=20), nullable=True))
    _backfill(op.get_bind())
    # SQLite cannot make a column NOT NULL without copying the table, which would drop the triggers on it
    # (counters, search text): the column stays nullable there, and every insert gives a reference.
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("applications", "reference", existing_type=sa.String(length=20), nullable=False)
    op.create_index("ix_applications_reference", "applications", ["reference"], unique=True)


def downgrade():
    op.drop_index("ix_applications_reference", table_name="applications")
    op.drop_column("applications", "reference")
