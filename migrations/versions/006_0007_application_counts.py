"""Application counters kept by triggers: constant-time dashboard, cycle and list counts.

Revision ID: 0007_application_counts
Revises: 0006_portal

Triggers append delta rows in the same transaction as every write to `applications` (see
core/models/counts.py). PostgreSQL uses statement-level triggers with transition tables (one aggregated
INSERT per statement, also for COPY); SQLite uses row-level triggers. Existing rows are counted once here.
"""
from alembic import op
import sqlalchemy as sa

revision = "0007_application_counts"
down_revision = "0006_portal"
branch_labels = None
depends_on = None

COUNTED = "institution_id, cycle_id, program_id, stage, decision, paid, enrolled"
DAY = "institution_id, cycle_id, CAST(submitted_at AS DATE)"

POSTGRES_FUNCTIONS = {
    "insert": f"""
        INSERT INTO application_counts ({COUNTED}, n)
        SELECT {COUNTED}, count(*) FROM new_rows GROUP BY {COUNTED};
        INSERT INTO application_day_counts (institution_id, cycle_id, day, n)
        SELECT {DAY}, count(*) FROM new_rows GROUP BY {DAY};""",
    "update": f"""
        INSERT INTO application_counts ({COUNTED}, n)
        SELECT {COUNTED}, sum(n) FROM (
            SELECT {COUNTED}, 1 AS n FROM new_rows UNION ALL SELECT {COUNTED}, -1 FROM old_rows) AS delta
        GROUP BY {COUNTED} HAVING sum(n) <> 0;
        INSERT INTO application_day_counts (institution_id, cycle_id, day, n)
        SELECT institution_id, cycle_id, day, sum(n) FROM (
            SELECT {DAY} AS day, 1 AS n FROM new_rows UNION ALL SELECT {DAY}, -1 FROM old_rows) AS delta
        GROUP BY institution_id, cycle_id, day HAVING sum(n) <> 0;""",
    "delete": f"""
        INSERT INTO application_counts ({COUNTED}, n)
        SELECT {COUNTED}, -count(*) FROM old_rows GROUP BY {COUNTED};
        INSERT INTO application_day_counts (institution_id, cycle_id, day, n)
        SELECT {DAY}, -count(*) FROM old_rows GROUP BY {DAY};""",
}
POSTGRES_TRANSITIONS = {
    "insert": "REFERENCING NEW TABLE AS new_rows",
    "update": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "delete": "REFERENCING OLD TABLE AS old_rows",
}


def _sqlite_rows(prefix: str, sign: int) -> str:
    values = ", ".join(f"{prefix}.{column.strip()}" for column in COUNTED.split(","))
    return f"""
        INSERT INTO application_counts ({COUNTED}, n) VALUES ({values}, {sign});
        INSERT INTO application_day_counts (institution_id, cycle_id, day, n)
        VALUES ({prefix}.institution_id, {prefix}.cycle_id, date({prefix}.submitted_at), {sign});"""


_CHANGED = " OR ".join(f"OLD.{column} IS NOT NEW.{column}"
                       for column in ("institution_id", "cycle_id", "program_id", "stage", "decision", "paid",
                                      "enrolled", "submitted_at"))
SQLITE_TRIGGERS = {
    "insert": f"AFTER INSERT ON applications BEGIN {_sqlite_rows('NEW', 1)} END",
    "update": f"AFTER UPDATE ON applications WHEN {_CHANGED} BEGIN {_sqlite_rows('OLD', -1)} "
              f"{_sqlite_rows('NEW', 1)} END",
    "delete": f"AFTER DELETE ON applications BEGIN {_sqlite_rows('OLD', -1)} END",
}


def upgrade():
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "application_counts",
        sa.Column("id", big_id, autoincrement=True, nullable=False),
        sa.Column("institution_id", sa.String(length=32), nullable=False),
        sa.Column("cycle_id", sa.String(length=32), nullable=False),
        sa.Column("program_id", sa.String(length=32), nullable=False),
        sa.Column("stage", sa.String(length=64), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("paid", sa.Boolean(), nullable=False),
        sa.Column("enrolled", sa.Boolean(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_application_counts")),
    )
    op.create_index("ix_application_counts_cycle", "application_counts", ["institution_id", "cycle_id"])
    op.create_table(
        "application_day_counts",
        sa.Column("id", big_id, autoincrement=True, nullable=False),
        sa.Column("institution_id", sa.String(length=32), nullable=False),
        sa.Column("cycle_id", sa.String(length=32), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_application_day_counts")),
    )
    op.create_index("ix_application_day_counts_cycle", "application_day_counts",
                    ["institution_id", "cycle_id", "day"])

    if op.get_bind().dialect.name == "postgresql":
        for event, body in POSTGRES_FUNCTIONS.items():
            op.execute(f"CREATE FUNCTION karibu_count_applications_{event}() RETURNS trigger "
                       f"LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NULL; END $$")
            op.execute(f"CREATE TRIGGER applications_count_{event} AFTER {event.upper()} ON applications "
                       f"{POSTGRES_TRANSITIONS[event]} FOR EACH STATEMENT "
                       f"EXECUTE FUNCTION karibu_count_applications_{event}()")
        day = DAY
    else:
        for event, definition in SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER applications_count_{event} {definition}")
        day = "institution_id, cycle_id, date(submitted_at)"
    op.execute(f"INSERT INTO application_counts ({COUNTED}, n) "
               f"SELECT {COUNTED}, count(*) FROM applications GROUP BY {COUNTED}")
    op.execute(f"INSERT INTO application_day_counts (institution_id, cycle_id, day, n) "
               f"SELECT {day}, count(*) FROM applications GROUP BY {day}")


def downgrade():
    for event in ("insert", "update", "delete"):
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER applications_count_{event} ON applications")
            op.execute(f"DROP FUNCTION karibu_count_applications_{event}()")
        else:
            op.execute(f"DROP TRIGGER applications_count_{event}")
    op.drop_index("ix_application_day_counts_cycle", table_name="application_day_counts")
    op.drop_table("application_day_counts")
    op.drop_index("ix_application_counts_cycle", table_name="application_counts")
    op.drop_table("application_counts")
