from tests.portal.conftest import _fresh_login_counters, admin, portal_as  # noqa: F401 (fixtures)
