"""Settings: time zone, language and identity (preferences), sending domains, the logo files served to anyone, and
API keys."""
# The views register on `portal.bp`; the logo files have their own `brand` blueprint, registered by wsgi.py.
from portal.settings import api_keys, apply_link, preferences, sender_domains  # noqa: F401
