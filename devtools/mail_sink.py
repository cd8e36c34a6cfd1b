"""A local SMTP sink (aiosmtpd) for development: accepts every message and keeps it as a `.eml` file."""
from __future__ import annotations

import itertools
import logging
from datetime import datetime, timezone
from pathlib import Path

from aiosmtpd.controller import Controller

log = logging.getLogger(__name__)


class SavingHandler:
    """aiosmtpd handler that writes each message to `<directory>/<time>-<n>.eml`."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._numbers = itertools.count(1)

    async def handle_DATA(self, server, session, envelope):
        number = next(self._numbers)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        path = self.directory / f"{stamp}-{number:05d}.eml"
        path.write_bytes(envelope.original_content or envelope.content)
        log.info("mail from %s to %s saved as %s", envelope.mail_from, ", ".join(envelope.rcpt_tos), path)
        return f"250 2.0.0 Ok: saved as {path.name}"


def start_sink(host: str, port: int, directory: Path) -> Controller:
    controller = Controller(SavingHandler(directory), hostname=host, port=port)
    controller.start()
    return controller
