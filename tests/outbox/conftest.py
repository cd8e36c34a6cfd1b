from tests.messages.conftest import mail_app, smtp  # noqa: F401 (fixtures)
