"""Webhooks (admins): the endpoint's settings, test sends, the delivery log, and failures explained in words."""
# The views register on `portal.bp`.
from portal.webhooks import views  # noqa: F401
