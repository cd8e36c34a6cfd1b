"""Search: statistics of every short gram, so a pair that no one's text holds is known to be rare.

A search of one or two characters asks the short-gram index (0020_short_search_grams, on the applications since
0021_search_text_on_applications) for that gram, and the planner chooses between the index and a walk of the
list order from the grams' most common elements, which ANALYZE keeps for the index's expression. With the
default statistics target (100) those elements stopped at a frequency of about 1.2%, and a gram missing from
them was estimated at half that: 0.6% of the applications. For a pair that few or none contain ("bn", "xq",
"zd") the planner then expected a page within the first 1% of the list order and walked it, reading all of a
million applications' index entries to find none: 300–350 ms, 40 times a list page, on a database migrated and
analyzed from scratch. At 1,000 the elements hold every gram (about 480 in the demo data, 10,000 slots), the
smallest at 0.23%, so a missing one is estimated at about a thousand rows and read from the index (under 1 ms).

The target is the index column's own (`ALTER INDEX … ALTER COLUMN 1`); once it is committed the applications are
analyzed again, so the new statistics exist before the first search (about 25 s at a million applications; reads
and writes go on meanwhile). PostgreSQL only, like the index.

Revision ID: 0022_short_gram_statistics
Revises: 0021_search_text_on_applications
"""
from alembic import op

revision = "0022_short_gram_statistics"
down_revision = "0021_search_text_on_applications"
branch_labels = None
depends_on = None

SHORT_GRAMS_INDEX = "ix_applications_search_text_short_grams"
SHORT_GRAM_STATISTICS = 1000


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"ALTER INDEX {SHORT_GRAMS_INDEX} ALTER COLUMN 1 SET STATISTICS {SHORT_GRAM_STATISTICS}")
    # After a commit: an ANALYZE in the transaction that set the target still used the old one.
    with op.get_context().autocommit_block():
        op.execute("ANALYZE applications")


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"ALTER INDEX {SHORT_GRAMS_INDEX} ALTER COLUMN 1 SET STATISTICS -1")
