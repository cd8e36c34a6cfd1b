"""Writing the audit log: one row per API request, payment callback, portal action and public submission,
with secrets redacted, on its own connection and committed before the response is sent.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

import psycopg
from sqlalchemy import insert
from sqlalchemy.exc import SQLAlchemyError

from core.db import db, is_database_outage
from core.models import AuditLog, utcnow

logger = logging.getLogger("karibu.audit")
REDACTED = "[REDACTED]"
_SENSITIVE_NAME = re.compile(r"(key|token|secret|password|passwd|signature|auth|session|national_id|cursor|code)",
                             re.IGNORECASE)
# Path parameters are named by us: `token`, `reset_token`, `api_key` are secrets, `key_id` is not.
_SENSITIVE_PATH_PARAMETER = re.compile(r"(^|_)(key|token|secret|password|signature|session|national_id|cursor)$",
                                       re.IGNORECASE)
_PATH_PARAMETER = re.compile(r"<(?:[^<>:]+:)?([^<>]+)>")
# A path that matched no route has no parameter names: a segment shaped like a token (20 or more URL-safe
# characters, letters and digits mixed, as reset and invitation tokens and signed links are) is masked whole.
_TOKEN_SEGMENT = re.compile(r"(?<=/)(?=[^/]*[A-Za-z])(?=[^/]*[0-9])[A-Za-z0-9._~%-]{20,}(?=/|$)")
# Webhook secrets are base64 (`+/=`, `%2B`… in a query) or, made before Standard Webhooks support, URL-safe.
_SECRET_VALUE = re.compile(
    r"(sk_(live|trial)_[A-Za-z0-9_]+|whsec_[A-Za-z0-9_\-+/=%]+|eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)")
_LONG_DIGITS = re.compile(r"\d{9,}")
_INSERT_ROW = insert(AuditLog.__table__)
_AUDIT_COLUMNS = tuple(column.name for column in AuditLog.__table__.c if column.name != "id")
# One simple query (client-side parameters, so two statements may travel together); psycopg quotes each value.
_POSTGRES_WRITE = psycopg.sql.SQL("SET LOCAL synchronous_commit = off; INSERT INTO audit_log ({}) VALUES ({})").format(
    psycopg.sql.SQL(", ").join(map(psycopg.sql.Identifier, _AUDIT_COLUMNS)),
    psycopg.sql.SQL(", ").join(psycopg.sql.Placeholder(name) for name in _AUDIT_COLUMNS)).as_string()


@dataclass
class AuditEntry:
    """What a request declares about itself for its audit row (the hook adds method, path, timing, …)."""
    source: str  # api | callback | portal | public
    actor: str = "anonymous"
    institution_id: str | None = None
    action: str = ""
    target: str = ""
    status: int | None = None  # the action's own outcome when it differs from the response status
    detail: str = ""  # free text an action records (e.g. who asked for a data-subject request, and why)


def redact_text(text: str) -> str:
    """Mask secret-looking values anywhere in `text`; long digit runs (national ids) keep their last 4."""
    text = _SECRET_VALUE.sub(REDACTED, text)
    return _LONG_DIGITS.sub(lambda match: "*" * (len(match.group()) - 4) + match.group()[-4:], text)


def redact_query(query_string: str) -> str:
    pairs = parse_qsl(query_string, keep_blank_values=True)
    cleaned = [(name, REDACTED if _SENSITIVE_NAME.search(name) else redact_text(value)) for name, value in pairs]
    return urlencode(cleaned, safe=",:[]")


def redact_path(path: str, rule: str | None, arguments: Mapping[str, object] | None) -> str:
    """The path rebuilt from its matched route `rule` with secret parameters (by name: `<token>`, …) masked; a path
    that matched no route with its token-shaped segments masked."""
    if rule is None:
        return _TOKEN_SEGMENT.sub(REDACTED, path)

    def value(match: re.Match) -> str:
        name = match.group(1)
        return REDACTED if _SENSITIVE_PATH_PARAMETER.search(name) else str((arguments or {}).get(name, ""))

    return _PATH_PARAMETER.sub(value, rule)


def storable_text(text: str) -> str:
    """`text` as a database (PostgreSQL refuses NUL in text) or a log line can keep it: NUL and lone
    surrogates written as escapes."""
    if text.isascii() and "\x00" not in text:
        return text
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def redacted_request_path(path: str, rule: str | None, arguments: Mapping[str, object] | None) -> str:
    """What the audit log, the request log and error reports keep of a request path: secret route parameters
    and secret-looking values masked (`redact_path`, `redact_text`), NUL and lone surrogates escaped."""
    return storable_text(redact_text(redact_path(path, rule, arguments)))


def record_request(entry: AuditEntry, *, status: int, request_id: str, method: str, path: str, query: str,
                   duration_ms: int, client_ip: str, user_agent: str) -> None:
    """Write the row of one request. A failure is logged loudly but never fails the response."""
    fields = dict(
        created_at=utcnow(), source=entry.source, actor=entry.actor, institution_id=entry.institution_id,
        action=entry.action, target=entry.target, status=entry.status or status, request_id=request_id,
        method=method, path=path, query=redact_query(query), duration_ms=duration_ms, client_ip=client_ip,
        user_agent=user_agent, detail=redact_text(entry.detail) if entry.detail else None)
    for name in ("path", "target", "action", "user_agent"):
        if fields[name]:
            fields[name] = redact_text(str(fields[name]))
    for name, value in fields.items():  # a refused request's path or header may hold what the database refuses
        if isinstance(value, str):
            fields[name] = storable_text(value)
    for name in ("actor", "path", "target", "action", "user_agent"):  # the actor is a key prefix or an email
        fields[name] = fields[name][:AuditLog.__table__.c[name].type.length]
    try:
        if db.engine.dialect.name == "postgresql":
            _write_on_postgresql(fields)
        else:
            with db.engine.begin() as connection:
                connection.execute(_INSERT_ROW, fields)
    except (SQLAlchemyError, psycopg.Error) as error:
        if not is_database_outage(error):
            logger.exception("Could not write the audit row of request %s", request_id or "-")
            return
        original = getattr(error, "orig", None) or error
        logger.warning("Could not write the audit row of request %s: database unavailable (%s.%s: %s)",
                       request_id or "-", type(original).__module__, type(original).__qualname__,
                       " ".join(str(original).split()))


def _write_on_postgresql(fields: dict) -> None:
    """The row in one round trip, committed asynchronously (docs/design-notes.md, core/audit)."""
    with db.engine.connect() as pooled:
        connection = pooled.execution_options(isolation_level="AUTOCOMMIT").connection.driver_connection
        with psycopg.ClientCursor(connection) as cursor:
            cursor.execute(_POSTGRES_WRITE, fields)


def record_command(entry: AuditEntry, command: str) -> None:
    """The row of an operator command run from the CLI, which has no request for the hook to audit."""
    record_request(entry, status=entry.status or 200, request_id="", method="CLI", path=command, query="",
                   duration_ms=0, client_ip="", user_agent="")
