"""Key rotation benchmark: print figures, assert nothing (docs/performance.md has the results).

    python bench/secrets/bench_reencrypt.py [--rows 20000] [--batch-size 500]

`--rows` messages waiting with a personal link sealed under the old key (the largest encrypted column in
practice: webhook endpoints are one per institution, two-factor secrets one per staff member), on a throwaway
PostgreSQL database (KARIBU_BENCH_POSTGRES_URL). Then, under `SECRET_KEY` new and the old key a fallback: the
count `/readyz` makes (every ciphertext decrypted once), `secrets reencrypt`'s work (rows per second, batches
committed), a second run (nothing to rewrite) and the count again.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))
from bench.harness import load_average, sqlalchemy_url, throwaway_database  # noqa: E402

OLD_KEY = "bench-old-key-Xq3vT9pL2mZ8rK4wN7bY6cH1jF5dG0sA"
NEW_KEY = "bench-new-key-Lw8Rt2Yx5Kp9Mz3Qv7Nb4Hc6Jf1Dg0Sa"


def make_app(url: str, key: str, fallbacks: str = ""):
    from wsgi import create_app
    return create_app({"SQLALCHEMY_DATABASE_URI": sqlalchemy_url(url), "SECRET_KEY": key,
                       "SECRET_KEY_FALLBACKS": fallbacks})


def seed(app, rows: int) -> None:
    from flask_migrate import upgrade
    from sqlalchemy import insert

    from core.db import db
    from core.institutions import create_institution
    from core.messages.private_links import seal
    from core.models import new_id, utcnow
    from core.models.messages import Message
    with app.app_context():
        upgrade(directory=os.path.join(app.root_path, "migrations"))
        institution = create_institution("Bench University")
        now = utcnow()
        values = [{"id": new_id("msg"), "institution_id": institution.id, "channel": "email",
                   "recipient": f"applicant{number}@bench.example", "template": "decision", "language": "en",
                   "body_text": "Your link: {personal-link}", "status": "failed", "attempts": 1,
                   "private_link": seal(f"https://apply.bench.example/decisions/respond/{number:032d}"),
                   "created_at": now, "updated_at": now} for number in range(rows)]
        for start in range(0, rows, 5000):
            db.session.execute(insert(Message), values[start:start + 5000])
        db.session.commit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    from core.encryption.columns import pending_reencryption, reencrypt_all

    with throwaway_database("karibu_bench_secrets") as url:
        seed(make_app(url, OLD_KEY), args.rows)
        rotated = make_app(url, NEW_KEY, OLD_KEY)
        with rotated.app_context():
            started = time.perf_counter()
            pending = pending_reencryption()["messages.private_link"]
            counted = time.perf_counter() - started
            print(f"load {load_average()}; {args.rows} sealed links")
            print(f"/readyz count: {counted:.2f} s ({pending.to_reencrypt} to re-encrypt)")
            batches = []
            started = time.perf_counter()
            reports = reencrypt_all(on_batch=lambda _column, rows: batches.append(rows), batch_size=args.batch_size)
            took = time.perf_counter() - started
            done = sum(report.reencrypted for report in reports)
            print(f"reencrypt: {done} rows in {took:.2f} s = {done / took:,.0f} rows/s, {len(batches)} batches "
                  f"of {args.batch_size} committed")
            started = time.perf_counter()
            reports = reencrypt_all(batch_size=args.batch_size)
            print(f"second run: {sum(r.reencrypted for r in reports)} rewritten, "
                  f"{sum(r.current for r in reports)} already current, {time.perf_counter() - started:.2f} s")
            started = time.perf_counter()
            pending = pending_reencryption()["messages.private_link"]
            print(f"/readyz count after: {time.perf_counter() - started:.2f} s ({pending.to_reencrypt} left)")


if __name__ == "__main__":
    main()
