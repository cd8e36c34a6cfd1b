"""The institution's identity for applicants (name, logo, colour, contact, website, footer), each email's own
From and Reply-To, and messages' personal links kept encrypted out of their bodies.

Messages already sent or failed when this runs keep no usable link either: their answer, invitation and reset
links are replaced by the link slot, which the Messages page names "(personal link, hidden)" (a failed decision
message gets a fresh link when resent; a failed invitation or reset is sent anew). Messages still waiting to be
sent keep their body as written, so they go out as they were.

Revision ID: 0019_institution_identity
Revises: 0018_erased_applicants
"""
import re

from alembic import op
import sqlalchemy as sa

revision = "0019_institution_identity"
down_revision = "0018_erased_applicants"
branch_labels = None
depends_on = None

_INSTITUTION_COLUMNS = (
    ("display_name", sa.String(200)),
    ("brand_colour", sa.String(7)),
    ("contact_email", sa.String(254)),
    ("website", sa.String(300)),
    ("footer", sa.String(300)),
    ("logo", sa.LargeBinary()),
    ("logo_type", sa.String(16)),
    ("logo_digest", sa.String(16)),
)


_STORED_LINK = re.compile(r"https?://[^\s\"'<>]*?(?:/account/(?:invitation|reset)/|/decisions/respond/)[A-Za-z0-9._-]+")
LINK_SLOT = "{personal-link}"


def _mask_stored_links():
    messages = sa.table("messages", sa.column("id"), sa.column("status"), sa.column("body_text"),
                        sa.column("body_html"))
    connection = op.get_bind()
    rows = connection.execute(sa.select(messages.c.id, messages.c.body_text, messages.c.body_html)
                              .where(messages.c.status.in_(("sent", "failed")))).all()
    for message_id, text, html in rows:
        masked_text = _STORED_LINK.sub(LINK_SLOT, text or "")
        masked_html = _STORED_LINK.sub(LINK_SLOT, html) if html else html
        if masked_text != (text or "") or masked_html != html:
            connection.execute(sa.update(messages).where(messages.c.id == message_id)
                               .values(body_text=masked_text, body_html=masked_html))


def upgrade():
    with op.batch_alter_table("institutions") as table:
        for name, type_ in _INSTITUTION_COLUMNS:
            table.add_column(sa.Column(name, type_, nullable=True))
    with op.batch_alter_table("messages") as table:
        table.add_column(sa.Column("sender", sa.String(300), nullable=True))
        table.add_column(sa.Column("reply_to", sa.String(254), nullable=True))
        table.add_column(sa.Column("private_link", sa.Text(), nullable=True))
    _mask_stored_links()


def downgrade():
    with op.batch_alter_table("messages") as table:
        table.drop_column("private_link")
        table.drop_column("reply_to")
        table.drop_column("sender")
    with op.batch_alter_table("institutions") as table:
        for name, _ in reversed(_INSTITUTION_COLUMNS):
            table.drop_column(name)
