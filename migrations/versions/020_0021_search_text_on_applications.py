"""Search: each application carries its applicant's folded text, so a search page is read from one index.

A search page walked the applications in list order and fetched each one's applicant to test its text, or
started from the applicants' trigram index and sorted the matches' applications; at a million applications a
name shared by 1–2% of applicants cost 15–20 ms of random page reads, and a text of short words split by
punctuation ("w@w", whose trigrams 61,276 applicants share) over 100 ms. Here `applications.search_text` is a
copy of `applicants.search_text`, and on PostgreSQL:

- the list-order index (institution, submitted_at, id) INCLUDEs applicant_id and search_text, so the walk tests
  each application's text inside the index (an index-only scan: no table page read per application tested);
- the trigram and short-gram GIN indexes (0002_read_side, 0020_short_search_grams) move from applicants to
  applications, so a rare text's matches are applications already;
- the statistics target that lets the planner estimate a `LIKE '%…%'` moves too, at 2,000 entries instead of
  10,000: testing a pattern against 10,000 entries cost about 2 ms of planning per search, and with the walk
  now cheap (about 2 µs an application) the two plans cost the same around 0.4% of applications, where 2,000
  entries still estimate within a third; a text 10 times rarer or commoner is never mistaken for it.

Triggers keep the copy in step, in the same statement as the change, on both databases: an application
inserted (or moved to another applicant) takes its applicant's text, and a change of an applicant's text
(erasure empties it) reaches all their applications. No code path can forget it.

Revision ID: 0021_search_text_on_applications
Revises: 0020_short_search_grams
"""
import sqlalchemy as sa
from alembic import op

revision = "0021_search_text_on_applications"
down_revision = "0020_short_search_grams"
branch_labels = None
depends_on = None

SEARCH_TEXT_STATISTICS = 2000
# migration 0002_read_side's target for applicants.search_text, no longer matched by LIKE
APPLICANTS_SEARCH_TEXT_STATISTICS = 10000
LIST_ORDER_INDEX = "ix_applications_inst_submitted"
SEARCH_LIST_ORDER_INDEX = "ix_applications_inst_submitted_search"

POSTGRESQL_TRIGGERS = [
    """
CREATE OR REPLACE FUNCTION applications_take_search_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_text := COALESCE((SELECT search_text FROM applicants WHERE id = NEW.applicant_id), '');
    RETURN NEW;
END
$$
""",
    "CREATE TRIGGER applications_take_search_text BEFORE INSERT OR UPDATE OF applicant_id, search_text "
    "ON applications FOR EACH ROW EXECUTE FUNCTION applications_take_search_text()",
    """
CREATE OR REPLACE FUNCTION applicants_share_search_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE applications SET search_text = NEW.search_text WHERE applicant_id = NEW.id;
    RETURN NULL;
END
$$
""",
    "CREATE TRIGGER applicants_share_search_text AFTER UPDATE OF search_text ON applicants FOR EACH ROW "
    "WHEN (OLD.search_text IS DISTINCT FROM NEW.search_text) EXECUTE FUNCTION applicants_share_search_text()",
]

# SQLite cannot change NEW in a BEFORE trigger: the inserted row is updated after. The update of an application's
# own text (from the first trigger, or from the second) sets it to its applicant's, so a direct write cannot
# make it differ either.
SQLITE_TRIGGERS = [
    """
CREATE TRIGGER applications_take_search_text AFTER INSERT ON applications
BEGIN
    UPDATE applications SET search_text = COALESCE((SELECT search_text FROM applicants
                                                    WHERE id = NEW.applicant_id), '')
    WHERE id = NEW.id;
END
""",
    """
CREATE TRIGGER applications_keep_search_text AFTER UPDATE OF applicant_id, search_text ON applications
WHEN NEW.search_text IS NOT COALESCE((SELECT search_text FROM applicants WHERE id = NEW.applicant_id), '')
BEGIN
    UPDATE applications SET search_text = COALESCE((SELECT search_text FROM applicants
                                                    WHERE id = NEW.applicant_id), '')
    WHERE id = NEW.id;
END
""",
    """
CREATE TRIGGER applicants_share_search_text AFTER UPDATE OF search_text ON applicants
WHEN OLD.search_text IS NOT NEW.search_text
BEGIN
    UPDATE applications SET search_text = NEW.search_text WHERE applicant_id = NEW.id;
END
""",
]


def upgrade():
    postgresql = op.get_bind().dialect.name == "postgresql"
    op.add_column("applications", sa.Column("search_text", sa.String(500), nullable=False, server_default=""))
    # Copied before the triggers exist, so that each row is written once.
    if postgresql:
        op.execute("UPDATE applications SET search_text = applicants.search_text FROM applicants "
                   "WHERE applicants.id = applications.applicant_id AND applicants.search_text <> ''")
    else:
        op.execute("UPDATE applications SET search_text = COALESCE((SELECT search_text FROM applicants "
                   "WHERE applicants.id = applications.applicant_id), '')")
    for statement in POSTGRESQL_TRIGGERS if postgresql else SQLITE_TRIGGERS:
        op.execute(statement)
    if not postgresql:
        op.create_index(SEARCH_LIST_ORDER_INDEX, "applications", ["institution_id", "submitted_at", "id"])
        op.drop_index(LIST_ORDER_INDEX, table_name="applications")
        return
    op.execute(f"ALTER TABLE applications ALTER COLUMN search_text SET STATISTICS {SEARCH_TEXT_STATISTICS}")
    op.execute("ALTER TABLE applicants ALTER COLUMN search_text SET STATISTICS -1")
    with op.get_context().autocommit_block():
        op.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {SEARCH_LIST_ORDER_INDEX} ON applications "
                   "(institution_id, submitted_at, id) INCLUDE (applicant_id, search_text)")
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {LIST_ORDER_INDEX}")
        op.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_applications_search_text_trgm "
                   "ON applications USING gin (search_text gin_trgm_ops)")
        op.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_applications_search_text_short_grams "
                   "ON applications USING gin (short_text_grams(search_text))")
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_applicants_search_text_trgm")
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_applicants_search_text_short_grams")
        op.execute("ANALYZE applications")


def downgrade():
    postgresql = op.get_bind().dialect.name == "postgresql"
    if postgresql:
        with op.get_context().autocommit_block():
            op.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_applicants_search_text_trgm "
                       "ON applicants USING gin (search_text gin_trgm_ops)")
            op.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_applicants_search_text_short_grams "
                       "ON applicants USING gin (short_text_grams(search_text))")
            op.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {LIST_ORDER_INDEX} "
                       "ON applications (institution_id, submitted_at, id)")
            op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_applications_search_text_short_grams")
            op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_applications_search_text_trgm")
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {SEARCH_LIST_ORDER_INDEX}")
        op.execute("ALTER TABLE applicants ALTER COLUMN search_text "
                   f"SET STATISTICS {APPLICANTS_SEARCH_TEXT_STATISTICS}")
        op.execute("DROP TRIGGER IF EXISTS applicants_share_search_text ON applicants")
        op.execute("DROP TRIGGER IF EXISTS applications_take_search_text ON applications")
        op.execute("DROP FUNCTION IF EXISTS applicants_share_search_text()")
        op.execute("DROP FUNCTION IF EXISTS applications_take_search_text()")
    else:
        op.create_index(LIST_ORDER_INDEX, "applications", ["institution_id", "submitted_at", "id"])
        op.drop_index(SEARCH_LIST_ORDER_INDEX, table_name="applications")
        for trigger in ("applicants_share_search_text", "applications_keep_search_text",
                        "applications_take_search_text"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    # A plain DROP COLUMN (SQLite 3.35 and later): a batch copy of the table would lose its other triggers.
    op.execute("ALTER TABLE applications DROP COLUMN search_text")
