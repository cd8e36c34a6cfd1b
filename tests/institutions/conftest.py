from tests.portal.conftest import _fresh_login_counters, admin, portal_as  # noqa: F401 (fixtures)
from tests.messages.conftest import mail_app, smtp  # noqa: F401 (fixtures)
from tests.webhooks.conftest import clock, delivering, engine, receiver, resolver  # noqa: F401 (fixtures)
