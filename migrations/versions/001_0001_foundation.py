"""Foundation: identity, admissions, documents, events and the audit log.

Revision ID: 0001_foundation
Revises: 
Create Date: 2026-11-21 10:03:01.687830

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0001_foundation'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('audit_log',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('request_id', sa.String(length=64), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=True),
    sa.Column('actor', sa.String(length=100), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('action', sa.String(length=100), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('method', sa.String(length=8), nullable=False),
    sa.Column('path', sa.String(length=500), nullable=False),
    sa.Column('query', sa.Text(), nullable=False),
    sa.Column('status', sa.Integer(), nullable=False),
    sa.Column('duration_ms', sa.Integer(), nullable=False),
    sa.Column('client_ip', sa.String(length=64), nullable=False),
    sa.Column('user_agent', sa.String(length=300), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_log'))
    )
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.create_index('ix_audit_log_institution_created', ['institution_id', 'created_at'], unique=False)

    op.create_table('institutions',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('verification_price', sa.Numeric(precision=12, scale=2), nullable=True),
    sa.Column('verification_currency', sa.String(length=3), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('deleted_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_institutions'))
    )
    op.create_table('api_keys',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('last_used_at', sa.DateTime(), nullable=True),
    sa.Column('revoked_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_api_keys_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_keys_key_hash'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_institution_id'), ['institution_id'], unique=False)

    op.create_table('applicants',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('first_name', sa.String(length=100), nullable=False),
    sa.Column('last_name', sa.String(length=100), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('phone', sa.String(length=32), nullable=True),
    sa.Column('gender', sa.String(length=16), nullable=True),
    sa.Column('date_of_birth', sa.Date(), nullable=True),
    sa.Column('search_text', sa.String(length=500), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_applicants_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_applicants'))
    )
    with op.batch_alter_table('applicants', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_applicants_institution_id'), ['institution_id'], unique=False)

    op.create_table('cycles',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('opens_at', sa.DateTime(), nullable=False),
    sa.Column('closes_at', sa.DateTime(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_cycles_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cycles'))
    )
    with op.batch_alter_table('cycles', schema=None) as batch_op:
        batch_op.create_index('ix_cycles_institution_opens', ['institution_id', 'opens_at', 'id'], unique=False)

    op.create_table('events',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('type', sa.String(length=64), nullable=False),
    sa.Column('occurred_at', sa.DateTime(), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('subject_id', sa.String(length=32), nullable=True),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_events_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_events'))
    )
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.create_index('ix_events_institution_occurred', ['institution_id', 'occurred_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_events_subject_id'), ['subject_id'], unique=False)

    op.create_table('programs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('fee', sa.Numeric(precision=12, scale=2), nullable=False),
    sa.Column('currency', sa.String(length=3), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_programs_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_programs'))
    )
    with op.batch_alter_table('programs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_programs_institution_id'), ['institution_id'], unique=False)

    op.create_table('stages',
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_stages_institution_id_institutions')),
    sa.PrimaryKeyConstraint('institution_id', 'key', name=op.f('pk_stages'))
    )
    op.create_table('users',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('last_login_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_users_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('email', name=op.f('uq_users_email'))
    )
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_users_institution_id'), ['institution_id'], unique=False)

    op.create_table('applications',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('applicant_id', sa.String(length=32), nullable=False),
    sa.Column('program_id', sa.String(length=32), nullable=False),
    sa.Column('cycle_id', sa.String(length=32), nullable=False),
    sa.Column('campus_id', sa.String(length=32), nullable=True),
    sa.Column('stage', sa.String(length=64), nullable=False),
    sa.Column('decision', sa.String(length=16), nullable=False),
    sa.Column('enrolled', sa.Boolean(), nullable=False),
    sa.Column('paid', sa.Boolean(), nullable=False),
    sa.Column('amount', sa.Numeric(precision=12, scale=2), nullable=False),
    sa.Column('currency', sa.String(length=3), nullable=False),
    sa.Column('submitted_at', sa.DateTime(), nullable=False),
    sa.Column('submitted_by_staff', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['applicant_id'], ['applicants.id'], name=op.f('fk_applications_applicant_id_applicants')),
    sa.ForeignKeyConstraint(['cycle_id'], ['cycles.id'], name=op.f('fk_applications_cycle_id_cycles')),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_applications_institution_id_institutions')),
    sa.ForeignKeyConstraint(['program_id'], ['programs.id'], name=op.f('fk_applications_program_id_programs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_applications'))
    )
    with op.batch_alter_table('applications', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_applications_applicant_id'), ['applicant_id'], unique=False)
        batch_op.create_index('ix_applications_inst_cycle_submitted', ['institution_id', 'cycle_id', 'submitted_at', 'id'], unique=False)
        batch_op.create_index('ix_applications_inst_submitted', ['institution_id', 'submitted_at', 'id'], unique=False)
        batch_op.create_index('ix_applications_inst_updated', ['institution_id', 'updated_at', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_applications_program_id'), ['program_id'], unique=False)

    op.create_table('cycle_programs',
    sa.Column('cycle_id', sa.String(length=32), nullable=False),
    sa.Column('program_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['cycle_id'], ['cycles.id'], name=op.f('fk_cycle_programs_cycle_id_cycles')),
    sa.ForeignKeyConstraint(['program_id'], ['programs.id'], name=op.f('fk_cycle_programs_program_id_programs')),
    sa.PrimaryKeyConstraint('cycle_id', 'program_id', name=op.f('pk_cycle_programs'))
    )
    op.create_table('decisions',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('application_id', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('sent_at', sa.DateTime(), nullable=True),
    sa.Column('response', sa.String(length=16), nullable=True),
    sa.Column('responded_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['application_id'], ['applications.id'], name=op.f('fk_decisions_application_id_applications')),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_decisions_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_decisions'))
    )
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_decisions_application_id'), ['application_id'], unique=False)

    op.create_table('documents',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('application_id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('filename', sa.String(length=255), nullable=False),
    sa.Column('content_type', sa.String(length=100), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['application_id'], ['applications.id'], name=op.f('fk_documents_application_id_applications')),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_documents_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_documents'))
    )
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_documents_application_id'), ['application_id'], unique=False)

    op.create_table('payments',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('institution_id', sa.String(length=32), nullable=False),
    sa.Column('application_id', sa.String(length=32), nullable=True),
    sa.Column('processor', sa.String(length=32), nullable=False),
    sa.Column('processor_reference', sa.String(length=100), nullable=False),
    sa.Column('amount', sa.Numeric(precision=12, scale=2), nullable=True),
    sa.Column('currency', sa.String(length=3), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('completed_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['application_id'], ['applications.id'], name=op.f('fk_payments_application_id_applications')),
    sa.ForeignKeyConstraint(['institution_id'], ['institutions.id'], name=op.f('fk_payments_institution_id_institutions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_payments')),
    sa.UniqueConstraint('processor', 'processor_reference', name='uq_payments_processor_ref')
    )
    with op.batch_alter_table('payments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_payments_application_id'), ['application_id'], unique=False)



def downgrade():
    with op.batch_alter_table('payments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_payments_application_id'))

    op.drop_table('payments')
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_documents_application_id'))

    op.drop_table('documents')
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_decisions_application_id'))

    op.drop_table('decisions')
    op.drop_table('cycle_programs')
    with op.batch_alter_table('applications', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_applications_program_id'))
        batch_op.drop_index('ix_applications_inst_updated')
        batch_op.drop_index('ix_applications_inst_submitted')
        batch_op.drop_index('ix_applications_inst_cycle_submitted')
        batch_op.drop_index(batch_op.f('ix_applications_applicant_id'))

    op.drop_table('applications')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_users_institution_id'))

    op.drop_table('users')
    op.drop_table('stages')
    with op.batch_alter_table('programs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_programs_institution_id'))

    op.drop_table('programs')
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_events_subject_id'))
        batch_op.drop_index('ix_events_institution_occurred')

    op.drop_table('events')
    with op.batch_alter_table('cycles', schema=None) as batch_op:
        batch_op.drop_index('ix_cycles_institution_opens')

    op.drop_table('cycles')
    with op.batch_alter_table('applicants', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_applicants_institution_id'))

    op.drop_table('applicants')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_institution_id'))

    op.drop_table('api_keys')
    op.drop_table('institutions')
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.drop_index('ix_audit_log_institution_created')

    op.drop_table('audit_log')
