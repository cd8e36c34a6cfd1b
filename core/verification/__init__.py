"""Record verification add-on: `list_issuers`, `validate_request`, `verify`, `usage_by_month` and `usage_csv`."""
from core.verification.billing import usage_by_month, usage_csv  # noqa: F401
from core.verification.registries import REGISTRIES  # noqa: F401
from core.verification.service import (  # noqa: F401
    RecordNotFound, VerificationResult, list_issuers, replayed_answer, verify,
)
from core.verification.validation import validate_request  # noqa: F401
