"""Webhook URLs: the query string (often a token) stored encrypted, the URL kept with its values masked.

Existing endpoints are converted with the running app's SECRET_KEY (the key that encrypts signing secrets);
URLs recorded on past attempts are masked. The downgrade puts the real query strings back into the URLs
(attempts stay masked).

Revision ID: 0009_webhook_url_secret
Revises: 0008_messages
"""
from alembic import op
import sqlalchemy as sa

revision = "0009_webhook_url_secret"
down_revision = "0008_messages"
branch_labels = None
depends_on = None

endpoints = sa.table("webhook_endpoints", sa.column("id", sa.String), sa.column("url", sa.String),
                     sa.column("url_query_ciphertext", sa.Text))
attempts = sa.table("webhook_attempts", sa.column("id", sa.String), sa.column("url", sa.String))


def _secret_box():
    from flask import current_app

    from core.webhooks.signing import SecretBox
    return SecretBox(current_app.config["SECRET_KEY"])


def upgrade():
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.add_column(sa.Column("url_query_ciphertext", sa.Text(), nullable=True))

    from core.webhooks.urls import masked_url, split_query
    connection = op.get_bind()
    with_query = connection.execute(sa.select(endpoints.c.id, endpoints.c.url)
                                    .where(endpoints.c.url.contains("?"))).all()
    if with_query:
        box = _secret_box()
        for endpoint_id, url in with_query:
            shown, query = split_query(url)
            connection.execute(endpoints.update().where(endpoints.c.id == endpoint_id)
                               .values(url=shown, url_query_ciphertext=box.encrypt(query) if query else None))
    for attempt_id, url in connection.execute(sa.select(attempts.c.id, attempts.c.url)
                                              .where(attempts.c.url.contains("?"))).all():
        connection.execute(attempts.update().where(attempts.c.id == attempt_id).values(url=masked_url(url)))


def downgrade():
    from core.webhooks.urls import with_query
    connection = op.get_bind()
    encrypted = connection.execute(sa.select(endpoints.c.id, endpoints.c.url, endpoints.c.url_query_ciphertext)
                                   .where(endpoints.c.url_query_ciphertext.is_not(None))).all()
    if encrypted:
        box = _secret_box()
        for endpoint_id, url, ciphertext in encrypted:
            connection.execute(endpoints.update().where(endpoints.c.id == endpoint_id)
                               .values(url=with_query(url, box.decrypt(ciphertext))))
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.drop_column("url_query_ciphertext")
