"""Record verification: the public /try page (trial key) and staff live lookups with their usage."""
# The views register on `portal.bp`.
from portal.verification import views  # noqa: F401
