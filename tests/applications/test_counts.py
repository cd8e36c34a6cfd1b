"""The application counters equal COUNT(*) after every kind of write, and the pages that read them agree."""
from __future__ import annotations

import json
import random
import re

import pytest
from sqlalchemy import func, select, text

from core.applications.counters import compact_counts
from core.db import db
from core.models import Application
from tests.conftest import auth_header
from tests.events.sources.test_apply import form_fields
from tests.events.sources.test_payment_callbacks import flutterwave_body, post_flutterwave

FLUTTERWAVE_HASH = "flw-dashboard-secret-hash"
DECISIONS = ("none", "accepted", "waitlisted", "rejected", "deferred")


@pytest.fixture
def school(app, factory, monkeypatch):
    monkeypatch.setitem(app.config, "FLUTTERWAVE_SECRET_HASH", FLUTTERWAVE_HASH)
    monkeypatch.setitem(app.config, "PUBLIC_FORM_RATE_LIMIT", "100000/minute")
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    programs = [factory.program(institution) for _ in range(3)]
    offered = [programs[:2], programs[1:]]
    cycles = [factory.cycle(institution, programs=offer) for offer in offered]
    return institution, raw_key, offered, cycles, factory.stages(institution)


def verify(app) -> dict:
    result = app.test_cli_runner().invoke(args=["counts", "verify", "--json"])
    return {"exit_code": result.exit_code, **json.loads(result.output)}


def application_ids(app, institution) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(select(Application.id).where(Application.institution_id == institution.id)))


def test_counters_equal_count_star_after_a_random_mix_of_writes(app, client, factory, school):
    institution, raw_key, offered, cycles, stages = school
    other = factory.institution()  # another institution's rows must be counted apart
    for _ in range(3):
        factory.application(other)
    rng = random.Random(20261123)
    for index in range(12):
        which = rng.randrange(2)
        factory.application(institution, cycle=cycles[which], program=rng.choice(offered[which]),
                            stage=rng.choice(stages), decision=rng.choice(DECISIONS),
                            paid=rng.random() < 0.3, enrolled=rng.random() < 0.2)
    for round_number in range(6):
        ids = application_ids(app, institution)
        updates = [{"id": app_id, **rng.choice([
            {"stage": rng.choice(stages)}, {"decision": rng.choice(DECISIONS[1:]), "send_decision": True},
            {"enrolled": rng.random() < 0.5}, {"stage": rng.choice(stages), "decision": rng.choice(DECISIONS)}])}
            for app_id in rng.sample(ids, k=min(len(ids), rng.randint(1, 8)))]
        response = client.patch("/api/v1/applications/update", json={"updates": updates},
                                headers=auth_header(raw_key))
        assert response.status_code == 200, response.get_json()
        which = rng.randrange(2)
        applied = client.post(f"/apply/{institution.id}", data=form_fields(
            client, institution, cycle_id=cycles[which].id, program_id=rng.choice(offered[which]).id,
            email=f"mix{round_number}@example.com"))
        assert applied.status_code == 302 and applied.location.endswith("/submitted")
        paid = post_flutterwave(client, flutterwave_body(rng.choice(application_ids(app, institution)),
                                                         amount=50000, charge_id=1000 + round_number))
        assert paid.status_code in (200, 202, 409), paid.get_json()
        if round_number % 2:
            with app.app_context():
                compact_counts()
        assert verify(app) == {"exit_code": 0, "ok": True, "mismatches": []}

    with app.app_context():
        db.session.execute(Application.__table__.delete().where(Application.institution_id == other.id)
                           .where(Application.id.in_(application_ids(app, other)[:1])))
        db.session.commit()
    assert verify(app)["ok"] is True


def test_dashboard_and_cycles_page_show_the_counted_numbers(app, client, factory, school):
    institution, raw_key, offered, cycles, stages = school
    programs = offered[0]
    for index in range(7):
        factory.application(institution, cycle=cycles[0], program=programs[index % 2], paid=index < 3,
                            stage=stages[index % 2])
    user = factory.user(institution, role="admin", password="correct-horse-1")
    login = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', login).group(1)
    client.post("/login", data={"csrf_token": token, "email": user.email, "password": "correct-horse-1"})
    with app.app_context():
        compact_counts()
        expected = db.session.scalar(select(func.count()).select_from(Application)
                                     .where(Application.cycle_id == cycles[0].id))
    assert expected == 7
    dashboard = client.get(f"/dashboard?cycle={cycles[0].id}").get_data(as_text=True)
    assert "<dt>Applications</dt><dd>7</dd>" in dashboard
    assert "3 of 7" in dashboard  # paid
    page = client.get("/cycles").get_data(as_text=True)
    assert ">7 applicants<" in page and "3 paid" in page


def test_verify_reports_a_counter_that_differs(app, factory, school):
    institution, _, offered, cycles, stages = school
    programs = offered[0]
    factory.application(institution, cycle=cycles[0], program=programs[0])
    with app.app_context():
        db.session.execute(text(
            "INSERT INTO application_counts (institution_id, cycle_id, program_id, stage, decision, paid, "
            "enrolled, n) VALUES (:i, :c, :p, 'submitted', 'none', :f, :f, 1)"),
            {"i": institution.id, "c": cycles[0].id, "p": programs[0].id, "f": False})
        db.session.commit()
    result = verify(app)
    assert result["exit_code"] == 1 and result["ok"] is False
    [mismatch] = result["mismatches"]
    assert (mismatch["table"], mismatch["counted"], mismatch["actual"]) == ("application_counts", 2, 1)


def test_compaction_keeps_counts_and_folds_rows(app, factory, school):
    institution, _, offered, cycles, stages = school
    programs = offered[0]
    for _ in range(5):
        factory.application(institution, cycle=cycles[0], program=programs[0])
    with app.app_context():
        rows_before = db.session.scalar(text("SELECT count(*) FROM application_counts"))
        assert compact_counts() >= rows_before - 1
        assert db.session.scalar(text("SELECT count(*) FROM application_counts")) == 1
        assert compact_counts() == 0
    assert verify(app)["ok"] is True
