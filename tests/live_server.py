"""The app served on a real HTTP/1.1 server (werkzeug, threaded) on a free loopback port, for tests that need
real sockets: browsers, concurrent clients, raw or chunked bodies, docs examples run as programs."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from werkzeug.serving import BaseWSGIServer, make_server


@contextmanager
def serving(app) -> Iterator[BaseWSGIServer]:
    """`app` served in a thread for the block; the server (its `server_port`) is yielded, then shut down."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def base_url(server: BaseWSGIServer) -> str:
    return f"http://127.0.0.1:{server.server_port}"
