"""Retention: delete rows older than their kind's retention period (`RULES`), in short committed batches; on
PostgreSQL whole monthly partitions past the period are first detached and dropped (core/privacy/partitions.py)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, exists, func, select

from core.config import Settings, settings
from core.db import db
from core.models import AuditLog, Event, IdempotencyKey
from core.models.messages import SENDABLE_MESSAGE_STATUSES, Message
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery
from core.privacy.partitions import drop_expired_partitions, partitioning_active
from core.webhooks.runtime import runtime


@dataclass(frozen=True)
class RetentionRule:
    name: str
    model: type
    timestamp: object  # the column compared with the cutoff
    keep_days: Callable[[Settings], int]
    # Extra conditions: rows that must stay even when old (e.g. deliveries still to send).
    conditions: Callable[[], tuple] = lambda: ()
    # Rows of other tables that reference a batch and go with it (deleted first).
    dependants: tuple[tuple[type, object], ...] = ()
    # Partitioned tables (PostgreSQL) whose whole expired months are dropped before the batches, each with the
    # SQL condition that keeps a partition anyway (`{partition}` its name; `:cutoff` and `:sendable` bound).
    partitions: tuple[tuple[str, str | None], ...] = ()


RULES: list[RetentionRule] = [
    RetentionRule("audit_log", AuditLog, AuditLog.created_at, lambda s: s.RETENTION_AUDIT_DAYS,
                  partitions=(("audit_log", None),)),
    # A month of attempts goes whole only when none of its attempts belongs to a delivery that stays.
    RetentionRule(
        "webhook_deliveries", WebhookDelivery, WebhookDelivery.created_at, lambda s: s.RETENTION_WEBHOOK_DAYS,
        conditions=lambda: (WebhookDelivery.status.not_in(SENDABLE_STATUSES),),
        dependants=((WebhookAttempt, WebhookAttempt.delivery_id),),
        partitions=(("webhook_attempts",
                     ("SELECT EXISTS (SELECT 1 FROM {partition} AS attempt JOIN webhook_deliveries AS delivery"
                      " ON delivery.id = attempt.delivery_id"
                      " WHERE delivery.created_at >= :cutoff OR delivery.status = ANY(:sendable))")),)),
    # An event still referenced by a delivery stays until that delivery goes (no foreign key on PostgreSQL, where
    # events is partitioned: this rule keeps the reference whole).
    RetentionRule(
        "events", Event, Event.occurred_at,
        lambda s: s.EVENTS_RETENTION_DAYS + s.RETENTION_EVENTS_DAYS_PAST_FEED,
        conditions=lambda: (~exists().where(WebhookDelivery.event_id == Event.id),),
        partitions=(("events", ("SELECT EXISTS (SELECT 1 FROM {partition} AS event JOIN webhook_deliveries AS delivery"
                                " ON delivery.event_id = event.id)")),)),
    # Messages still to send stay whatever their age.
    RetentionRule("messages", Message, Message.created_at, lambda s: s.RETENTION_MESSAGES_DAYS,
                  conditions=lambda: (Message.status.not_in(SENDABLE_MESSAGE_STATUSES),)),
    # Stored answers of writes sent with an Idempotency-Key are replayed for 24 hours (core/idempotency/keys.py).
    RetentionRule("idempotency_keys", IdempotencyKey, IdempotencyKey.created_at, lambda s: 1),
]


@dataclass
class RuleReport:
    name: str
    cutoff: datetime
    deleted: int = 0
    dependants_deleted: dict[str, int] = field(default_factory=dict)
    partitions_dropped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"kind": self.name, "cutoff": self.cutoff.isoformat() + "Z", "deleted": self.deleted,
                "dependants_deleted": self.dependants_deleted, "partitions_dropped": self.partitions_dropped}


def run_retention(*, dry_run: bool = False, batch_size: int | None = None,
                  on_batch: Callable[[str, int], None] | None = None) -> list[RuleReport]:
    """Delete (or, with `dry_run`, count) every expired row; returns one report per kind of record."""
    config = settings()
    batch_size = batch_size or config.RETENTION_BATCH_SIZE
    now = runtime.clock.now()
    reports = []
    for rule in RULES:
        report = RuleReport(rule.name, now - timedelta(days=rule.keep_days(config)))
        expired = (rule.timestamp < report.cutoff, *rule.conditions())
        primary_key = rule.model.__mapper__.primary_key[0]
        if dry_run:
            report.deleted = db.session.scalar(select(func.count()).select_from(rule.model).where(*expired))
            db.session.rollback()
        else:
            _drop_expired_partitions(rule, report)
            last = None  # keyset: a batch never rescans the index entries of the rows already deleted
            while True:
                after = () if last is None else (primary_key > last,)
                ids = list(db.session.scalars(
                    select(primary_key).where(*expired, *after).order_by(primary_key).limit(batch_size)))
                if not ids:
                    db.session.rollback()
                    break
                for model, column in rule.dependants:
                    result = db.session.execute(delete(model).where(column.in_(ids)))
                    report.dependants_deleted[model.__tablename__] = (
                        report.dependants_deleted.get(model.__tablename__, 0) + result.rowcount)
                db.session.execute(delete(rule.model).where(primary_key.in_(ids)))
                db.session.commit()
                last = ids[-1]
                report.deleted += len(ids)
                if on_batch:
                    on_batch(rule.name, len(ids))
        reports.append(report)
    return reports


def _drop_expired_partitions(rule: RetentionRule, report: RuleReport) -> None:
    """Drop the rule's whole expired monthly partitions; their rows count as deleted (or as dependants)."""
    if not partitioning_active():
        return
    for table, still_needed in rule.partitions:
        dropped, rows = drop_expired_partitions(table, report.cutoff, still_needed,
                                                {"cutoff": report.cutoff, "sendable": list(SENDABLE_STATUSES)})
        report.partitions_dropped.extend(dropped)
        if table == rule.model.__tablename__:
            report.deleted += rows
        elif dropped:
            report.dependants_deleted[table] = report.dependants_deleted.get(table, 0) + rows
