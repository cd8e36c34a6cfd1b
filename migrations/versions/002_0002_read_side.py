"""Read side: search indexes.

On PostgreSQL, a trigram GIN index on applicants.search_text (the folded "first last email" text) lets
`search_text LIKE '%…%'` use an index instead of scanning every applicant. It is built CONCURRENTLY so an
existing database keeps taking writes meanwhile.

The column also gets the largest statistics target. The planner estimates how many applicants a
`LIKE '%…%'` pattern matches by testing it against the column's histogram; with the default 100 entries a
surname shared by 2% of applicants can look like 0.01% (or a rare full name like 1%), and the wrong plan
then costs seconds instead of milliseconds (walking the submitted_at index for a rare text, or sorting tens
of thousands of matches of a common one). With 10,000 entries the estimates are close, for about 3 ms of
planning per search.

SQLite has no trigram index: search there scans the applicants of the institution, which suits the
embedded default's scale.

Revision ID: 0002_read_side
Revises: 0001_foundation
"""
from alembic import op

revision = "0002_read_side"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None

SEARCH_INDEX = "ix_applicants_search_text_trgm"
SEARCH_TEXT_STATISTICS = 10000


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute(f"ALTER TABLE applicants ALTER COLUMN search_text SET STATISTICS {SEARCH_TEXT_STATISTICS}")
    with op.get_context().autocommit_block():
        op.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {SEARCH_INDEX} "
                   "ON applicants USING gin (search_text gin_trgm_ops)")
        op.execute("ANALYZE applicants")


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {SEARCH_INDEX}")
    op.execute("ALTER TABLE applicants ALTER COLUMN search_text SET STATISTICS -1")
