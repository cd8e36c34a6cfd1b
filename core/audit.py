"""The audit log: one row per API request and per portal action, with secrets redacted.

Rows are written on their own connection and transaction, so an audit row is kept even when the
request's own transaction was rolled back, and writing it never commits the request's pending work.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode

import logging

from sqlalchemy import insert
from sqlalchemy.exc import SQLAlchemyError

from core.extensions import db
from core.models import AuditLog, utcnow

logger = logging.getLogger("karibu.audit")
REDACTED = "[REDACTED]"
_SENSITIVE_NAME = re.compile(r"(key|token|secret|password|passwd|signature|auth|session|national_id|cursor)",
                             re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"(sk_(live|trial)_[A-Za-z0-9_]+|whsec_[A-Za-z0-9_\-]+|eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)")
_LONG_DIGITS = re.compile(r"\d{9,}")


def redact_text(text: str) -> str:
    """Mask secret-looking values anywhere in `text`; long digit runs (national ids) keep their last 4."""
    text = _SECRET_VALUE.sub(REDACTED, text)
    return _LONG_DIGITS.sub(lambda match: "*" * (len(match.group()) - 4) + match.group()[-4:], text)


def redact_query(query_string: str) -> str:
    pairs = parse_qsl(query_string, keep_blank_values=True)
    cleaned = [(name, REDACTED if _SENSITIVE_NAME.search(name) else redact_text(value)) for name, value in pairs]
    return urlencode(cleaned, safe=",:[]")


def record_audit(**fields) -> None:
    fields.setdefault("created_at", utcnow())
    for name in ("path", "target", "action", "user_agent"):
        if fields.get(name):
            fields[name] = redact_text(str(fields[name]))[:AuditLog.__table__.c[name].type.length]
    with db.engine.begin() as connection:
        connection.execute(insert(AuditLog.__table__).values(**fields))


def audit_api_request(**fields) -> None:
    """Audit one API request. A failure to write is logged loudly but does not fail the response."""
    try:
        record_audit(**fields)
    except SQLAlchemyError:
        logger.exception("Could not write the audit row of request %s", fields.get("request_id", "-"))


def record_portal_action(user, action: str, target: str = "", *, status: int = 200, request_id: str = "",
                         method: str = "", path: str = "", client_ip: str = "", user_agent: str = "") -> None:
    """Audit one portal action by a signed-in user (or an anonymous visitor when `user` is None)."""
    record_audit(
        source="portal",
        institution_id=getattr(user, "institution_id", None),
        actor=getattr(user, "email", "anonymous"),
        action=action,
        target=target,
        status=status,
        request_id=request_id,
        method=method,
        path=path,
        client_ip=client_ip,
        user_agent=user_agent,
    )
