import os
import re
import subprocess
import sys
import uuid
from contextlib import contextmanager

from sqlalchemy import create_engine, inspect, text

from tests.conftest import POSTGRES_ADMIN_URL, TEST_DB

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def flask_command(database_url: str, *args: str) -> subprocess.CompletedProcess:
    """`flask --app wsgi <args>` on `database_url`, as an operator runs it."""
    env = {**os.environ, "DATABASE_URL": database_url}
    return subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@contextmanager
def empty_database(tmp_path):
    """The URL of a new, empty database of the suite's kind (SQLite file or PostgreSQL database), dropped after."""
    if TEST_DB != "postgres":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    name = f"karibu_migrate_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_migrations_upgrade_downgrade_upgrade_on_an_empty_database(tmp_path):
    with empty_database(tmp_path) as url:
        for step in (("db", "upgrade"), ("db", "downgrade", "base"), ("db", "upgrade")):
            result = flask_command(url, *step)
            assert result.returncode == 0, result.stderr
        engine = create_engine(url)
        tables = set(inspect(engine).get_table_names())
        engine.dispose()
        assert {"institutions", "users", "api_keys", "programs", "cycles", "stages", "applicants", "applications",
                "decisions", "payments", "documents", "audit_log", "events"} <= tables
        seeded = flask_command(url, "seed-demo", "--applications", "5", "--json")
        assert seeded.returncode == 0, seeded.stderr


def test_the_reference_migration_gives_every_existing_application_its_own(tmp_path):
    """Applications written before 0027_application_reference get a distinct reference as they are migrated."""
    with empty_database(tmp_path) as url:
        for step in (("db", "upgrade"), ("seed-demo", "--applications", "30", "--json"),
                     ("db", "downgrade", "0026_sandbox"), ("db", "upgrade")):
            result = flask_command(url, *step)
            assert result.returncode == 0, result.stderr
        engine = create_engine(url)
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT reference, submitted_at FROM applications")).all()
        engine.dispose()
        references = [reference for reference, _ in rows]
        assert len(references) == 30 and len(set(references)) == 30
        for reference, submitted_at in rows:
            year = str(submitted_at)[:4]
            assert re.fullmatch(rf"DU-{year}-[0-9A-HJKMNP-TV-Z]{{5}}", reference), reference
