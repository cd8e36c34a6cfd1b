"""Record verification add-on: registries, validation, demo and live lookups, billing and usage.

The functions the API and the portal use:

- `list_issuers(include_demo)`: registries and their request fields (plus `demo_requests` for the trial key).
- `validate_request(body) -> (registry, fields)`: raises InvalidInput listing every problem in `errors`.
- `verify(principal, body, idempotency_key) -> VerificationResult`: raises RecordNotFound (404),
  ServiceUnavailable (503) or InvalidInput (400).
- `usage_by_month(scope)` and `usage_csv(scope, month=None)`: billed usage for the portal.
"""
from core.verification.billing import usage_by_month, usage_csv  # noqa: F401
from core.verification.registries import REGISTRIES  # noqa: F401
from core.verification.service import (  # noqa: F401
    RecordNotFound, VerificationResult, list_issuers, verify,
)
from core.verification.validation import validate_request  # noqa: F401
