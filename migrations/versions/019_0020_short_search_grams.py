"""Search: an index for one- and two-character texts.

The trigram index (0002_read_side) serves `LIKE '%…%'` only for texts of three characters or more; a shorter
text walked the applications in list order, probing each applicant, so one that few or none contain ("q", "xq")
read all of them: about 220 ms at a million applications, the slowest searches by far. Here each applicant's
folded text (`search_text`) is indexed by its short grams: every character and every pair of adjacent
characters (`short_text_grams`), in a GIN index. A text of one or two characters is a substring of
`search_text` exactly when it is one of its grams, so the search asks for that element instead (core.applications
.listing.statements): a text nobody contains is answered from the index in well under a millisecond, a common one
still walks the list order and stops after a page, and the planner picks between them from the grams'
statistics (most common elements), which ANALYZE keeps for the index's expression.

Why not the alternatives: a prefix index on the names would change the meaning of a search (a substring today,
also inside emails); full-text search matches words, not parts of them. The function is PL/pgSQL because it is
evaluated for every row ANALYZE samples (all of them, with search_text's statistics target of 10,000): a
generate_series and array_agg version cost four times as much (89 against 21 µs a row).

The index is built CONCURRENTLY so an existing database keeps taking writes meanwhile. PostgreSQL only, like the
trigram index; SQLite's search scans.

Revision ID: 0020_short_search_grams
Revises: 0019_institution_identity
"""
from alembic import op

revision = "0020_short_search_grams"
down_revision = "0019_institution_identity"
branch_labels = None
depends_on = None

SHORT_GRAMS_INDEX = "ix_applicants_search_text_short_grams"

# Every character of `text` and every pair of adjacent ones (duplicates are left to GIN, which keeps each key once).
SHORT_TEXT_GRAMS = """
CREATE OR REPLACE FUNCTION short_text_grams(text_to_index text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    grams text[] := string_to_array(text_to_index, NULL);
    at integer;
BEGIN
    FOR at IN 1 .. length(text_to_index) - 1 LOOP
        grams := grams || substr(text_to_index, at, 2);
    END LOOP;
    RETURN grams;
END
$$
"""


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(SHORT_TEXT_GRAMS)
    with op.get_context().autocommit_block():
        op.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {SHORT_GRAMS_INDEX} "
                   "ON applicants USING gin (short_text_grams(search_text))")
        op.execute("ANALYZE applicants")


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {SHORT_GRAMS_INDEX}")
    op.execute("DROP FUNCTION IF EXISTS short_text_grams(text)")
