"""A claim leases at most one batch, however many deliveries are due and whatever plan the database picks."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, insert, select, text

from core.db import db
from core.models import Event, new_id
from core.models.webhooks import WebhookDelivery, WebhookEndpoint
from core.outbox.leases import claim
from core.webhooks.delivery import CLAIM_BATCH, DELIVERIES
from tests.webhooks.test_webhook_engine import configure

DELIVERED_ROWS = 3000
DUE_ROWS = 463


def add_deliveries(app, institution, count: int, now, status: str = "pending") -> None:
    """`count` deliveries written in bulk; pending ones come due one second apart, oldest first (the order
    they were created in, as in a real backlog)."""
    with app.app_context():
        endpoint_id = db.session.scalar(select(WebhookEndpoint.id).where(
            WebhookEndpoint.institution_id == institution.id))
        events = [{"id": new_id("evt"), "institution_id": institution.id, "type": "webhook.test",
                   "occurred_at": now, "payload": {}} for _ in range(count)]
        db.session.execute(insert(Event), events)
        db.session.execute(insert(WebhookDelivery), [{
            "id": new_id("whd"), "institution_id": institution.id, "endpoint_id": endpoint_id,
            "event_id": event["id"], "event_type": "webhook.test", "status": status, "attempts": 0,
            "next_attempt_at": now - timedelta(seconds=count - index) if status == "pending" else None,
            "created_at": now, "updated_at": now,
        } for index, event in enumerate(events)])
        db.session.commit()


def leased_by(app, token: str) -> int:
    with app.app_context():
        count = db.session.scalar(select(func.count()).select_from(WebhookDelivery)
                                  .where(WebhookDelivery.lease_token == token))
        db.session.rollback()
        return count


def analyse(app) -> None:
    with app.app_context():
        if db.engine.dialect.name == "postgresql":
            with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text("ANALYZE webhook_deliveries"))
                connection.execute(text("ANALYZE events"))
        else:
            with db.engine.begin() as connection:
                connection.execute(text("ANALYZE"))


@pytest.mark.parametrize("statistics", ["fresh", "analysed_before_the_backlog", "analysed"])
def test_a_claim_leases_one_batch_of_a_large_backlog(engine, factory, receiver, clock, statistics):
    """3,000 delivered rows and a backlog of 463 due ones: every claim leases exactly one batch.

    With statistics taken before the backlog arrived, PostgreSQL planned the old `id IN (SELECT … LIMIT 16
    FOR UPDATE SKIP LOCKED)` as a nested loop that re-ran the subquery per row and leased all 463."""
    institution = factory.institution()
    configure(engine, institution, receiver)
    add_deliveries(engine, institution, DELIVERED_ROWS, clock.now(), status="delivered")
    if statistics == "analysed_before_the_backlog":
        analyse(engine)
    add_deliveries(engine, institution, DUE_ROWS, clock.now())
    if statistics == "analysed":
        analyse(engine)

    seen: set[str] = set()
    for _ in range(8):  # past psycopg's prepare threshold, so generic plans are used too
        with engine.app_context():
            claimed = claim(DELIVERIES, clock.now(), CLAIM_BATCH)
            token, ids = claimed.token, claimed.ids
        assert len(ids) == CLAIM_BATCH
        assert leased_by(engine, token) == CLAIM_BATCH  # nothing leased beyond what the claim returned
        assert not seen & set(ids)  # a later claim skips what is leased
        seen |= set(ids)
