"""A real DNS server on loopback (dnslib) answering TXT records the test publishes and withdraws; `txt_lookup` is
what a receiving mail server does to find a DKIM key (dnspython against this server)."""
from __future__ import annotations

import threading

import dns.resolver
from dnslib import QTYPE, RCODE, RR, TXT
from dnslib.server import BaseResolver, DNSLogger, DNSServer

from tests.messages.smtp_server import free_port


class _Zone(BaseResolver):
    def __init__(self):
        self.records: dict[str, list[str]] = {}
        self.lock = threading.Lock()

    def resolve(self, request, handler):
        reply = request.reply()
        name = str(request.q.qname).rstrip(".").lower()
        with self.lock:
            values = list(self.records.get(name, ()))
        if not values:
            reply.header.rcode = RCODE.NXDOMAIN
        elif request.q.qtype == QTYPE.TXT:
            for value in values:  # strings of at most 255 bytes, as DNS providers split long values
                data = value.encode()
                reply.add_answer(RR(request.q.qname, QTYPE.TXT, ttl=60,
                                    rdata=TXT([data[start:start + 255] for start in range(0, len(data), 255)])))
        return reply


class DnsServer:
    """UDP and TCP on one free port of 127.0.0.1 (a long DKIM key is answered over TCP when UDP truncates it)."""

    def __init__(self):
        self.zone = _Zone()
        self.port = free_port()
        quiet = DNSLogger(logf=lambda line: None)
        self._servers = [DNSServer(self.zone, port=self.port, address="127.0.0.1", tcp=tcp, logger=quiet)
                         for tcp in (False, True)]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "DnsServer":
        for server in self._servers:
            server.start_thread()
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.stop()
            server.server.server_close()

    def publish(self, name: str, value: str) -> None:
        with self.zone.lock:
            self.zone.records.setdefault(name.rstrip(".").lower(), []).append(value)

    def withdraw(self, name: str) -> None:
        with self.zone.lock:
            self.zone.records.pop(name.rstrip(".").lower(), None)

    def txt_lookup(self, name: bytes, timeout: int = 5) -> bytes | None:
        """dkimpy's `dnsfunc`: the TXT record at `name`, looked up on this server."""
        resolver = dns.resolver.Resolver(configure=False)
        resolver.nameservers, resolver.port, resolver.lifetime = ["127.0.0.1"], self.port, timeout
        try:
            answer = resolver.resolve(name.decode().rstrip("."), "TXT")
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return None
        return b"".join(b"".join(record.strings) for record in answer)
