"""Read side: search indexes.

On PostgreSQL, a trigram GIN index on applicants.search_text (the folded "first last email" text) lets
`search_text LIKE '%…%'` use an index instead of scanning every applicant. It is built CONCURRENTLY so an
existing database keeps taking writes meanwhile. SQLite has no trigram index: search there scans the
applicants of the institution, which suits the embedded default's scale.

Revision ID: 0002_read_side
Revises: 0001_foundation
"""
from alembic import op

revision = "0002_read_side"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None

SEARCH_INDEX = "ix_applicants_search_text_trgm"


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    with op.get_context().autocommit_block():
        op.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {SEARCH_INDEX} "
                   "ON applicants USING gin (search_text gin_trgm_ops)")


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {SEARCH_INDEX}")
