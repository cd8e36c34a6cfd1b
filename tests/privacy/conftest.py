from tests.portal.conftest import portal_as  # noqa: F401 (fixture)
