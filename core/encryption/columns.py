"""Every column holding a ciphertext of the key ring, and their re-encryption under SECRET_KEY (`secrets
reencrypt`): rows read under a fallback key are rewritten in committed batches, rows already under SECRET_KEY
are left alone, rows no key reads are reported."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.orm import InstrumentedAttribute

from core.accounts.sso import SECRET_LABEL as SSO_SECRET_LABEL
from core.accounts.two_factor import TWO_FACTOR_LABEL
from core.db import db
from core.institutions.sender_domains import KEY_LABEL as DKIM_KEY_LABEL
from core.messages.private_links import PRIVATE_LINK_LABEL
from core.models import TwoFactorCredential
from core.models.messages import Message
from core.models.sender_domains import SenderDomain
from core.models.sso import SsoConfiguration
from core.models.webhooks import WebhookEndpoint
from core.secret_key import current_key_fernet, derived_fernet, key_ring
from core.webhooks.signing import WEBHOOK_SECRET_LABEL

REENCRYPT_BATCH = 500


@dataclass(frozen=True)
class EncryptedColumn:
    """A column of Fernet tokens made by `derived_fernet(…, label)`, rows named by `key`."""
    name: str
    key: InstrumentedAttribute
    column: InstrumentedAttribute
    label: bytes


# Register a new encrypted column here (one line): `secrets reencrypt` and /readyz then cover it.
ENCRYPTED_COLUMNS = [
    EncryptedColumn("webhook_endpoints.secret_ciphertext", WebhookEndpoint.id, WebhookEndpoint.secret_ciphertext,
                    WEBHOOK_SECRET_LABEL),
    EncryptedColumn("webhook_endpoints.url_query_ciphertext", WebhookEndpoint.id,
                    WebhookEndpoint.url_query_ciphertext, WEBHOOK_SECRET_LABEL),
    EncryptedColumn("two_factor_credentials.secret_ciphertext", TwoFactorCredential.user_id,
                    TwoFactorCredential.secret_ciphertext, TWO_FACTOR_LABEL),
    EncryptedColumn("messages.private_link", Message.id, Message.private_link, PRIVATE_LINK_LABEL),
    EncryptedColumn("sender_domains.dkim_private_key_ciphertext", SenderDomain.id,
                    SenderDomain.dkim_private_key_ciphertext, DKIM_KEY_LABEL),
    EncryptedColumn("sso_configurations.client_secret_ciphertext", SsoConfiguration.institution_id,
                    SsoConfiguration.client_secret_ciphertext, SSO_SECRET_LABEL),
]


@dataclass
class ColumnReport:
    """What one column held: rows re-encrypted now, already under SECRET_KEY, and unreadable under every key
    (their ids), plus rows changed by someone else meanwhile (left for the next run)."""
    column: str
    reencrypted: int = 0
    current: int = 0
    changed_meanwhile: int = 0
    unreadable: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"column": self.column, "reencrypted": self.reencrypted, "already_current": self.current,
                "changed_meanwhile": self.changed_meanwhile, "unreadable": len(self.unreadable),
                "unreadable_ids": self.unreadable}


@dataclass(frozen=True)
class Pending:
    """Rows SECRET_KEY alone cannot read: readable under a fallback key (to re-encrypt), or under none."""
    to_reencrypt: int
    unreadable: int


def pending_reencryption(connection=None) -> dict[str, Pending]:
    """Per column, the rows not yet under SECRET_KEY, read through `connection` (default: the session's)."""
    execute = (connection or db.session).execute
    pending = {}
    for encrypted in ENCRYPTED_COLUMNS:
        current, ring = current_key_fernet(encrypted.label), derived_fernet(key_ring(), encrypted.label)
        stale = [token for token in execute(select(encrypted.column).where(encrypted.column.is_not(None))).scalars()
                 if not _readable(current, token)]
        unreadable = sum(1 for token in stale if not _readable(ring, token))
        pending[encrypted.name] = Pending(to_reencrypt=len(stale) - unreadable, unreadable=unreadable)
    return pending


def stored_ciphertexts() -> int:
    """How many ciphertexts the registered columns hold in all (what `reencrypt_all` looks at)."""
    return sum(db.session.scalar(select(func.count()).where(encrypted.column.is_not(None))) or 0
               for encrypted in ENCRYPTED_COLUMNS)


def reencrypt_all(on_batch: Callable[[str, int], None] | None = None,
                  batch_size: int = REENCRYPT_BATCH) -> list[ColumnReport]:
    """Rewrite every ciphertext made under a fallback key under SECRET_KEY, column by column in batches each
    committed (idempotent: a second run rewrites nothing; resumable: a run stopped midway loses nothing).
    `on_batch(column, rows_looked_at)` after each batch."""
    return [_reencrypt_column(encrypted, on_batch, batch_size) for encrypted in ENCRYPTED_COLUMNS]


def _reencrypt_column(encrypted: EncryptedColumn, on_batch, batch_size: int) -> ColumnReport:
    from cryptography.fernet import InvalidToken

    report = ColumnReport(encrypted.name)
    current = current_key_fernet(encrypted.label)
    ring = derived_fernet(key_ring(), encrypted.label)
    after = None
    while True:
        query = select(encrypted.key, encrypted.column).where(encrypted.column.is_not(None))
        if after is not None:
            query = query.where(encrypted.key > after)
        rows = db.session.execute(query.order_by(encrypted.key).limit(batch_size)).all()
        if not rows:
            return report
        rewrites = []
        for row_id, token in rows:
            if _readable(current, token):
                report.current += 1
                continue
            try:
                rotated = ring.rotate(token.encode("ascii")).decode("ascii")
            except (InvalidToken, UnicodeEncodeError):
                report.unreadable.append(row_id)
                continue
            rewrites.append({"row_id": row_id, "read": token, "rotated": rotated})
        if rewrites:
            written = db.session.execute(_compare_and_set(encrypted), rewrites).rowcount
            report.reencrypted += written
            report.changed_meanwhile += len(rewrites) - written
        db.session.commit()
        after = rows[-1][0]
        if on_batch is not None:
            on_batch(encrypted.name, len(rows))


def _compare_and_set(encrypted: EncryptedColumn):
    """One statement for a batch (executemany): the new ciphertext only where the row still holds what was read,
    so a write meanwhile (a new secret) is never overwritten."""
    table = encrypted.column.class_.__table__
    column, key = table.c[encrypted.column.name], table.c[encrypted.key.name]
    return (update(table).where(key == bindparam("row_id"), column == bindparam("read"))
            .values({column.name: bindparam("rotated")}))


def _readable(box, token: str) -> bool:
    from cryptography.fernet import InvalidToken

    try:
        box.decrypt(token.encode("ascii"))
    except (InvalidToken, UnicodeEncodeError):
        return False
    return True
