"""A local HTTPS webhook receiver for tests and benchmarks (trustme certificates, 127.0.0.1 only)."""

from __future__ import annotations

import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import trustme

RECEIVER_HOSTNAMES = ("localhost", "127.0.0.1", "hooks.receiver.test")


@dataclass
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float


@dataclass
class Behaviour:
    """What the receiver answers; tests change it between requests."""

    status: int = 200
    body: bytes = b"ok"
    delay_seconds: float = 0.0
    location: str | None = None
    dribble_seconds: float = 0.0  # send the status line only after this long, one byte at a time
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_POST(self):
        server: ReceiverServer = self.server  # type: ignore[assignment]
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        server.record(ReceivedRequest("POST", self.path, dict(self.headers.items()), body, time.monotonic()))
        behaviour = server.behaviour
        if behaviour.delay_seconds:
            time.sleep(behaviour.delay_seconds)
        if behaviour.dribble_seconds:
            line = f"HTTP/1.1 {behaviour.status} OK\r\n".encode()
            step = behaviour.dribble_seconds / len(line)
            try:
                for byte in line:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(step)
            except OSError:
                return
            self.close_connection = True
            return
        try:
            self.send_response(behaviour.status)
            if behaviour.location:
                self.send_header("Location", behaviour.location)
            for name, value in behaviour.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(behaviour.body)))
            self.end_headers()
            self.wfile.write(behaviour.body)
        except OSError:
            self.close_connection = True


class ReceiverServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, ssl_context: ssl.SSLContext | None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = Behaviour()
        self.requests: list[ReceivedRequest] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        if ssl_context is not None:
            self.socket = ssl_context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request, client_address):
        """Failed handshakes are expected in TLS failure tests."""

    def get_request(self):
        sock, address = super().get_request()
        with self._lock:
            self.connections += 1
        return sock, address

    def record(self, request: ReceivedRequest) -> None:
        with self._arrived:
            self.requests.append(request)
            self._arrived.notify_all()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedRequest]:
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)
            return list(self.requests)

    @property
    def port(self) -> int:
        return self.server_address[1]


class Receiver:
    """Runs a ReceiverServer in a thread. `ca_path` is the PEM of the CA that signed its certificate."""

    def __init__(self, tmp_dir, *, tls: bool = True, hostnames=RECEIVER_HOSTNAMES, ca: trustme.CA | None = None):
        self.ca = ca or trustme.CA()
        context = None
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.ca.issue_cert(*hostnames).configure_cert(context)
        self.ca_path = str(tmp_dir / "receiver-ca.pem")
        self.ca.cert_pem.write_to_path(self.ca_path)
        self.server = ReceiverServer(context)
        self.scheme = "https" if tls else "http"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def start(self) -> "Receiver":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, host: str = "localhost", path: str = "/hooks") -> str:
        return f"{self.scheme}://{host}:{self.server.port}{path}"

    @property
    def behaviour(self) -> Behaviour:
        return self.server.behaviour

    @property
    def requests(self) -> list[ReceivedRequest]:
        return self.server.requests


@dataclass
class FakeResolver:
    """Maps host names to address lists; each lookup takes the next answer (the last one repeats)."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.answers:
            raise OSError(f"no such host: {host}")
        sequence = self.answers[host]
        index = min(self.lookups.count(host), len(sequence)) - 1
        return list(sequence[index])
