"""Message benchmarks: print figures, assert nothing (docs/performance.md has the results).

    python bench/messages/bench_messages.py throughput [--messages 1000] [--runs 3]
    python bench/messages/bench_messages.py patch-compare --baseline <git rev> [--runs 3] [--patches 5]

`throughput`: one bulk send queues 1,000 decision emails (two PATCHes of 500, the API's limit per request);
then ONE worker (an RQ SimpleWorker running `jobs.messages.drain`, as `flask --app wsgi worker` does) sends
them to a local aiosmtpd sink in another process; against a bare `smtplib` loop over one connection to the
same sink sending the same rendered messages (the outbox rows' subject, text and HTML, each built into an
EmailMessage by the loop, as any sender must). Also shown, for reference: the same loop sending bytes
serialised beforehand (the transport's ceiling, no building at all). Runs are interleaved (worker, bare,
bare-prebuilt, worker, …); min / median / max of messages per second and the ratio of medians.

`patch-compare`: milliseconds per PATCH of 500 decisions with `send_decision` (Flask test client, in process),
for the code of `--baseline` (exported with `git archive` to a temporary directory) and for this checkout,
interleaved, each run on a fresh PostgreSQL database.

Both use a throwaway PostgreSQL database (KARIBU_BENCH_POSTGRES_URL, default postgresql://root@127.0.0.1:5432/
postgres) and the Redis database of --redis-url (flushed; default redis://127.0.0.1:6379/7). Loopback only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Appended, not put first: `patch-run` imports the app from the tree it runs in (its working directory).
sys.path.append(str(ROOT))
from bench.harness import BENCH_SECRET_KEY, load_average, spread, sqlalchemy_url, throwaway_database  # noqa: E402

DECISIONS = ("accepted", "waitlisted", "deferred", "rejected")


def make_app(database_url: str, redis_url: str, extra: dict | None = None):
    from flask_migrate import upgrade

    from wsgi import create_app
    app = create_app({"SQLALCHEMY_DATABASE_URI": sqlalchemy_url(database_url), "REDIS_URL": redis_url,
                      "RATELIMIT_STORAGE_URI": redis_url, "API_RATE_LIMIT": "1000000/minute",
                      "SECRET_KEY": BENCH_SECRET_KEY, **(extra or {})})
    with app.app_context():
        upgrade(directory=os.path.join(app.root_path, "migrations"))
    return app


def seed(app, applications: int) -> tuple[str, list[str]]:
    """An institution with `applications` applications; returns (live key, application ids)."""
    from sqlalchemy import insert

    from core.db import db
    from core.institutions import create_institution
    from core.accounts.api_keys import create_api_key
    from core.models import Applicant, Application, Cycle, Program, new_id, utcnow
    from core.scoping import InstitutionScope
    with app.app_context():
        institution = create_institution("Bench University")
        program = Program(institution_id=institution.id, name="BSc Nursing")
        now = utcnow()
        cycle = Cycle(institution_id=institution.id, name="2026 Intake", opens_at=now - timedelta(days=10),
                      closes_at=now + timedelta(days=10))
        db.session.add_all([program, cycle])
        db.session.commit()
        people, rows = [], []
        for number in range(applications):
            person, application = new_id("apl"), new_id("app")
            people.append({"id": person, "institution_id": institution.id, "first_name": f"Applicant{number}",
                           "last_name": "Bench", "email": f"applicant{number}@bench.example",
                           "phone": "+250788000000", "search_text": "", "created_at": now})
            rows.append({"id": application, "reference": f"BU-2026-{number:05d}", "institution_id": institution.id, "applicant_id": person,
                         "program_id": program.id, "cycle_id": cycle.id, "stage": "submitted", "decision": "none",
                         "enrolled": False, "paid": False, "amount": 0, "currency": "RWF", "submitted_at": now,
                         "submitted_by_staff": False, "created_at": now, "updated_at": now})
        db.session.execute(insert(Applicant.__table__), people)
        db.session.execute(insert(Application.__table__), rows)
        db.session.commit()
        _, key = create_api_key(InstitutionScope(institution.id), name="bench")
        return key, [row["id"] for row in rows]


def patch(client, key: str, ids: list[str], decision: str) -> float:
    body = {"updates": [{"id": i, "decision": decision, "send_decision": True} for i in ids]}
    started = time.perf_counter()
    response = client.patch("/api/v1/applications/update", json=body, headers={"Authorization": f"Bearer {key}"})
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"PATCH failed: {response.status_code} {response.get_data(as_text=True)[:300]}")
    return elapsed


# --- throughput ---------------------------------------------------------------------------------------------

SINK_CODE = """
import sys, time
from aiosmtpd.controller import Controller
class Count:
    async def handle_DATA(self, server, session, envelope):
        return "250 2.0.0 Ok"
controller = Controller(Count(), hostname="127.0.0.1", port=int(sys.argv[1]))
controller.start()
print("READY", flush=True)
sys.stdin.read()
controller.stop()
"""


@contextmanager
def smtp_sink(port: int):
    """An SMTP server on 127.0.0.1:`port` in another process that accepts and drops every message."""
    sink = subprocess.Popen([sys.executable, "-c", SINK_CODE, str(port)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert sink.stdout.readline().strip() == "READY"
    try:
        yield
    finally:
        sink.stdin.close()
        sink.wait(timeout=10)


def throughput(args) -> None:
    import email.policy
    import smtplib

    import redis
    from rq import Queue, SimpleWorker
    from sqlalchemy import select

    from core.db import db, redis_connection
    from core.messages.transports import build_email
    from core.models.messages import Message

    port = 18025 + os.getpid() % 1000
    redis.Redis.from_url(args.redis_url).flushdb()
    with smtp_sink(port), throwaway_database() as database_url:
        app = make_app(database_url, args.redis_url, {"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": port})
        key, ids = seed(app, args.messages)
        client = app.test_client()
        worker_rates, bare_rates, prebuilt_rates = [], [], []
        print(f"load average at start: {load_average()}")
        for run in range(args.runs):
            decision = DECISIONS[run % 3]  # accepted, waitlisted, deferred: every email carries a link
            for start in range(0, len(ids), 500):
                patch(client, key, ids[start:start + 500], decision)
            with app.app_context():
                connection = redis_connection()
                started = time.perf_counter()
                SimpleWorker([Queue("messages", connection=connection)], connection=connection).work(
                    burst=True, logging_level="WARNING")
                elapsed = time.perf_counter() - started
                sent = db.session.scalars(select(Message).where(Message.status == "sent")
                                          .order_by(Message.sent_at.desc()).limit(len(ids))).all()
                assert len(sent) == len(ids), f"only {len(sent)} sent"
                worker_rates.append(len(ids) / elapsed)
                sender = app.config["MAIL_DEFAULT_SENDER"]
                rendered = [(m.recipient, m.recipient_name, m.subject, m.body_text, m.body_html,
                             m.message_id_header) for m in sent]
                db.session.remove()

            def built(recipient, name, subject, text, html, message_id):
                return build_email(sender=sender, recipient=recipient, recipient_name=name, subject=subject,
                                   text=text, html=html, message_id=message_id)

            started = time.perf_counter()
            with smtplib.SMTP("127.0.0.1", port) as smtp:
                for row in rendered:
                    smtp.send_message(built(*row), from_addr="no-reply@karibu.localhost", to_addrs=[row[0]])
            bare_rates.append(len(rendered) / (time.perf_counter() - started))

            payloads = [(row[0], built(*row).as_bytes(policy=email.policy.SMTP)) for row in rendered]
            started = time.perf_counter()
            with smtplib.SMTP("127.0.0.1", port) as smtp:
                for recipient, payload in payloads:
                    smtp.sendmail("no-reply@karibu.localhost", [recipient], payload)
            prebuilt_rates.append(len(payloads) / (time.perf_counter() - started))
            print(f"run {run + 1}: worker {worker_rates[-1]:7.1f} msg/s   bare smtplib {bare_rates[-1]:7.1f} "
                  f"msg/s   bare, prebuilt bytes {prebuilt_rates[-1]:7.1f} msg/s")
        print(f"load average at end: {load_average()}")
        for label, rates in (("worker", worker_rates), ("bare smtplib", bare_rates),
                             ("bare, prebuilt", prebuilt_rates)):
            print(f"{label:>15}: {spread(rates, 1, labels=True, separator='  ', width=7)} msg/s")
        worker = statistics.median(worker_rates)
        print(f"ratio of medians, worker / bare smtplib: {worker / statistics.median(bare_rates):.2f}")
        prebuilt = statistics.median(prebuilt_rates)
        print(f"ratio of medians, worker / bare with prebuilt bytes: {worker / prebuilt:.2f}")


# --- PATCH before and after ---------------------------------------------------------------------------------

def patch_run(args) -> None:
    """One run on the code in the current working directory: prints {"ms": [...]} as JSON."""
    import redis
    redis.Redis.from_url(args.redis_url).flushdb()
    with throwaway_database() as database_url:
        app = make_app(database_url, args.redis_url)
        key, ids = seed(app, 500)
        client = app.test_client()
        patch(client, key, ids, "waitlisted")  # warm-up (caches, first connection)
        timings = [patch(client, key, ids, DECISIONS[turn % 4]) * 1000 for turn in range(args.patches)]
        print(json.dumps({"ms": timings}))


def patch_compare(args) -> None:
    baseline_dir = Path(tempfile.mkdtemp(prefix="karibu-baseline-"))
    archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(baseline_dir)], input=archive, check=True)
    results: dict[str, list[float]] = {"before": [], "after": []}
    print(f"load average at start: {load_average()}")
    for run in range(args.runs):
        for label, directory in (("before", baseline_dir), ("after", ROOT)):
            output = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "patch-run", "--patches", str(args.patches),
                 "--redis-url", args.redis_url],
                cwd=directory, env={**os.environ, "PYTHONPATH": str(directory)}, capture_output=True, text=True)
            if output.returncode != 0:
                raise SystemExit(output.stderr[-2000:])
            timings = json.loads(output.stdout.strip().splitlines()[-1])["ms"]
            results[label].append(statistics.median(timings))
            print(f"run {run + 1} {label:>6}: median {results[label][-1]:7.1f} ms per PATCH of 500 "
                  f"(min {min(timings):.1f}, max {max(timings):.1f})")
    print(f"load average at end: {load_average()}")
    for label, values in results.items():
        print(f"{label:>6}: {spread(values, 1, labels=True, separator='  ', width=7)} ms")
    change = statistics.median(results["after"]) / statistics.median(results["before"]) - 1
    print(f"change of the median: {change * 100:+.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("throughput", "patch-compare", "patch-run"):
        command = sub.add_parser(name)
        command.add_argument("--redis-url", default="redis://127.0.0.1:6379/7")
        command.add_argument("--runs", type=int, default=3)
        command.add_argument("--messages", type=int, default=1000)
        command.add_argument("--patches", type=int, default=5)
        command.add_argument("--baseline", default="HEAD")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    {"throughput": throughput, "patch-compare": patch_compare, "patch-run": patch_run}[args.command](args)


if __name__ == "__main__":
    main()
