"""The institution's audit log, for people: actions and outcomes in words, filtered, linked to what they touched."""
# The views register on `portal.bp`.
from portal.audit import views  # noqa: F401
