"""Process-wide pieces of the webhook engine: the clock, the resolver, the transport and the secret box
(tests replace `clock` and `resolver`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.config import settings
from core.outbox.schedule import Clock, SystemClock
from core.secret_key import key_ring
from core.webhooks.signing import SecretBox
from core.webhooks.urls import Resolver

if TYPE_CHECKING:  # the transport brings requests and urllib3: imported by the processes that send
    from core.webhooks.transport import Transport, TransportSettings

SENDER_THREADS = 16


@dataclass
class Runtime:
    clock: Clock = field(default_factory=SystemClock)
    resolver: Resolver | None = None  # None: the system resolver
    _transports: dict = field(default_factory=dict)
    _boxes: dict = field(default_factory=dict)
    _senders: ThreadPoolExecutor | None = None

    def transport(self) -> Transport:
        """One transport (and so one keep-alive pool) per process and configuration."""
        from core.webhooks.transport import Transport

        settings = transport_settings()
        key = (settings, id(self.resolver))
        found = self._transports.get(key)
        if found is None:
            found = self._transports[key] = Transport(settings, resolver=self.resolver)
        return found

    def senders(self) -> ThreadPoolExecutor:
        """Threads that send a claimed batch concurrently (HTTP only; the caller records results)."""
        if self._senders is None:
            self._senders = ThreadPoolExecutor(max_workers=SENDER_THREADS, thread_name_prefix="webhook-sender")
        return self._senders

    def secret_box(self) -> SecretBox:
        ring = key_ring()
        box = self._boxes.get(ring)
        if box is None:
            box = self._boxes[ring] = SecretBox(ring)
        return box


def transport_settings() -> TransportSettings:
    from core.webhooks.transport import TransportSettings
    from core.webhooks.urls import answering_dev_receiver

    config = settings()
    return TransportSettings(
        allow_private=bool(config.WEBHOOK_ALLOW_PRIVATE_TARGETS),
        allow_http=bool(config.WEBHOOK_ALLOW_HTTP),
        ca_bundle=config.WEBHOOK_CA_BUNDLE or None,
        dev_origin=answering_dev_receiver(config.WEBHOOK_DEV_RECEIVER_URL),
    )


runtime = Runtime()
