"""Staff accounts: sign-in (password, or the university's account) and its pending second step, two-factor, one's own account and sessions, users."""
# The views register on `portal.bp`.
from portal.accounts import account, sign_in, sso, two_factor, users  # noqa: F401
