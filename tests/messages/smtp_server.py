"""A real SMTP server in the test process (aiosmtpd) that records what it receives and can refuse on demand."""
from __future__ import annotations

import email
import email.policy
import socket
import threading
from dataclasses import dataclass, field

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Received:
    mail_from: str
    recipients: list[str]
    data: bytes

    @property
    def message(self) -> email.message.EmailMessage:
        return email.message_from_bytes(self.data, policy=email.policy.default)


@dataclass
class Recorder:
    """aiosmtpd handler: answers RCPT and DATA as told (`rcpt_answers`/`data_answers` are consumed first)."""

    received: list[Received] = field(default_factory=list)
    rcpt_answers: list[str] = field(default_factory=list)
    data_answers: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        with self.lock:
            answer = self.rcpt_answers.pop(0) if self.rcpt_answers else None
        if answer:
            return answer
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            answer = self.data_answers.pop(0) if self.data_answers else None
            if answer:
                return answer
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
            return f"250 2.0.0 Ok: queued as Q{len(self.received)}"


class SmtpServer:
    """Start, stop and start again on the same port (to play an SMTP outage)."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.recorder = Recorder()
        self._controller: Controller | None = None

    def start(self) -> "SmtpServer":
        self._controller = Controller(self.recorder, hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    @property
    def received(self) -> list[Received]:
        return self.recorder.received
