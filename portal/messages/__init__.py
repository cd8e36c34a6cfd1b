"""Messages to applicants (admins): the list by status and channel, each message as sent, resend, default language."""
# The views register on `portal.bp`.
from portal.messages import views  # noqa: F401
