"""Webhooks: endpoints, deliveries and attempts.

Revision ID: 0005_webhooks
Revises: 0004_verification
"""
from alembic import op
import sqlalchemy as sa

revision = "0005_webhooks"
down_revision = "0004_verification"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('webhook_endpoints',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('url', sa.String(length=2048), nullable=False),
    sa.Column('event_types', sa.JSON(), nullable=False),
    sa.Column('include_applicant_name', sa.Boolean(), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('consecutive_failures', sa.Integer(), nullable=False),
    sa.Column('disabled_at', sa.DateTime(), nullable=True),
    sa.Column('secret_ciphertext', sa.Text(), nullable=False),
    sa.Column('secret_rotated_at', sa.DateTime(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_webhook_endpoints_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_endpoints')),
    sa.UniqueConstraint('institution_id', name=op.f('uq_webhook_endpoints_institution_id'))
    )
    op.create_table('webhook_deliveries',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('event_id', sa.String(length=32), nullable=False),
    sa.Column('event_type', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_response_code', sa.Integer(), nullable=True),
    sa.Column('last_error_class', sa.String(length=32), nullable=True),
    sa.Column('next_attempt_at', sa.DateTime(), nullable=True),
    sa.Column('lease_token', sa.String(length=32), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(), nullable=True),
    sa.Column('delivered_at', sa.DateTime(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['endpoint_id'], ['webhook_endpoints.id'], name=op.f('fk_webhook_deliveries_endpoint_id_webhook_endpoints')),
    sa.ForeignKeyConstraint(['event_id'], ['events.id'], name=op.f('fk_webhook_deliveries_event_id_events')),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_webhook_deliveries_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_deliveries'))
    )
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_endpoint_id'), ['endpoint_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_event_id'), ['event_id'], unique=False)
        batch_op.create_index('ix_webhook_deliveries_institution_created', ['institution_id', 'created_at', 'id'], unique=False)
        batch_op.create_index('ix_webhook_deliveries_institution_status_created', ['institution_id', 'status', 'created_at', 'id'], unique=False)
        batch_op.create_index('ix_webhook_deliveries_status_next', ['status', 'next_attempt_at'], unique=False)

    op.create_table('webhook_attempts',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('delivery_id', sa.String(length=32), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('url', sa.String(length=2048), nullable=False),
    sa.Column('attempted_at', sa.DateTime(), nullable=False),
    sa.Column('duration_ms', sa.Integer(), nullable=False),
    sa.Column('response_code', sa.Integer(), nullable=True),
    sa.Column('error_class', sa.String(length=32), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('response_excerpt', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['delivery_id'], ['webhook_deliveries.id'], name=op.f('fk_webhook_attempts_delivery_id_webhook_deliveries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_attempts'))
    )
    with op.batch_alter_table('webhook_attempts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_attempts_delivery_id'), ['delivery_id'], unique=False)



def downgrade():
    with op.batch_alter_table('webhook_attempts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_attempts_delivery_id'))

    op.drop_table('webhook_attempts')
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_webhook_deliveries_status_next')
        batch_op.drop_index('ix_webhook_deliveries_institution_status_created')
        batch_op.drop_index('ix_webhook_deliveries_institution_created')
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_event_id'))
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_endpoint_id'))

    op.drop_table('webhook_deliveries')
    op.drop_table('webhook_endpoints')
