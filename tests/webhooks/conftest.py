import pytest

from tests.webhooks.webhook_receiver import Receiver


@pytest.fixture
def receiver(tmp_path):
    running = Receiver(tmp_path).start()
    yield running
    running.stop()
