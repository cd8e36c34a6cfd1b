"""The benchmarks' shared harness: statistics, server environment, gunicorn on loopback, bench databases."""
from __future__ import annotations

from bench.harness.database import bench_institution_id, migrated_database, new_api_key, throwaway_database
from bench.harness.env import (
    BENCH_SECRET_KEY, PROJECT_ROOT, TRIAL_KEY, database_url, flask_cli, flask_json, libpq_url, server_env,
    sqlalchemy_url,
)
from bench.harness.portal import sign_in
from bench.harness.server import Server, free_port, gunicorn, memory_kib, rss_pss_kib, stop, wait_until_serving
from bench.harness.stats import load_average, machine_note, percentile, spread, summary_ms

__all__ = [
    "BENCH_SECRET_KEY", "PROJECT_ROOT", "TRIAL_KEY", "Server", "bench_institution_id", "database_url",
    "flask_cli", "flask_json", "free_port", "gunicorn", "libpq_url", "load_average", "machine_note",
    "memory_kib", "migrated_database", "new_api_key", "percentile", "rss_pss_kib", "server_env", "sign_in", "spread", "sqlalchemy_url",
    "stop", "summary_ms", "throwaway_database", "wait_until_serving",
]
