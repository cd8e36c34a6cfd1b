"""All models, imported here so that Alembic and the app see the whole metadata."""
# Identity, admissions, documents, events and audit
from core.models.admissions import (  # noqa: F401
    Applicant, Application, Cycle, Decision, Payment, Program, Stage, cycle_programs,
)
from core.models.audit import AuditLog  # noqa: F401
from core.models.base import Base, new_id, random_token, utcnow  # noqa: F401
from core.models.documents import Document  # noqa: F401
from core.models.events import Event  # noqa: F401
from core.models.identity import ApiKey, Institution, User  # noqa: F401
# Record verification
from core.models.verification import VerificationCharge  # noqa: F401
# Webhooks
from core.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint  # noqa: F401
# Staff portal
from core.models.checks import ApplicantCheck  # noqa: F401
# Counters (maintained by database triggers)
from core.models.counts import ApplicationCount, ApplicationDayCount  # noqa: F401
# Messages to applicants
from core.models.messages import Message  # noqa: F401
# Staff account lifecycle: invitations, password resets, server-side sessions
from core.models.accounts import PasswordReset, StaffInvitation, StaffSession  # noqa: F401
# Two-factor sign-in of staff
from core.models.two_factor import RecoveryCode, TwoFactorCredential  # noqa: F401
# History of admission-state changes (who changed what)
from core.models.history import ApplicationChange  # noqa: F401
# The staff's applicant list
from core.models.applicant_list import BulkChange, SavedView  # noqa: F401
# Institutions' sending domains (proven in DNS, own DKIM keys)
from core.models.sender_domains import SenderDomain  # noqa: F401
# Staff sign-in through an institution's OpenID Connect provider
from core.models.sso import SsoConfiguration, SsoDomain, SsoSpentState  # noqa: F401
# Stored answers of writes sent with an Idempotency-Key
from core.models.idempotency import IdempotencyKey  # noqa: F401
