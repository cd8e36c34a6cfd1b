import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from webhook_receiver import Receiver  # noqa: E402


@pytest.fixture
def receiver(tmp_path):
    running = Receiver(tmp_path).start()
    yield running
    running.stop()
