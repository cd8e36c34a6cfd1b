"""The shipped edge configuration, run for real: nginx (TLS) in front of the application."""
import os
import shutil
import socket
import string
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import trustme
from werkzeug.serving import make_server

from tests.conftest import app_config, auth_header
from wsgi import create_app

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def edge(database_url, tmp_path, factory):
    secret = "edge-secret-for-test"
    app = create_app({**app_config(database_url, tmp_path / "docs"), "EDGE_SHARED_SECRET": secret,
                      "PROXY_COUNT": 1})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    authority = trustme.CA()
    certificate = authority.issue_cert("localhost", "127.0.0.1")
    certificate.cert_chain_pems[0].write_to_path(tmp_path / "cert.pem")
    for blob in certificate.cert_chain_pems[1:]:
        blob.write_to_path(tmp_path / "cert.pem", append=True)
    certificate.private_key_pem.write_to_path(tmp_path / "key.pem")
    authority.cert_pem.write_to_path(tmp_path / "ca.pem")

    port = _free_port()
    values = {"KARIBU_UPSTREAM": f"127.0.0.1:{server.server_port}", "EDGE_SHARED_SECRET": secret,
              "TLS_CERT": str(tmp_path / "cert.pem"), "TLS_KEY": str(tmp_path / "key.pem"),
              "LISTEN_PORT": str(port), "SERVER_NAME": "localhost", "NGINX_RUNTIME_DIR": str(tmp_path)}
    for name in ("nginx.conf", "karibu_proxy_params"):
        rendered = string.Template((ROOT / "deploy" / name).read_text()).safe_substitute(values)
        (tmp_path / name).write_text(rendered)
    # Running as root in CI: keep nginx's workers as the same user so they can read the temp files.
    config = tmp_path / "nginx.conf"
    config.write_text("user root;\n" * (os.geteuid() == 0) + config.read_text())
    nginx = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(config), "-g", "daemon off;"],
                             stderr=subprocess.PIPE)
    base = f"https://localhost:{port}"
    for _ in range(100):
        try:
            requests.get(base + "/healthz", verify=str(tmp_path / "ca.pem"), timeout=1)
            break
        except (requests.ConnectionError, requests.Timeout):  # not listening yet, or slow to answer on a busy machine
            time.sleep(0.05)
    _, raw_key = factory.api_key(factory.institution())
    yield {"base": base, "direct": f"http://127.0.0.1:{server.server_port}", "ca": str(tmp_path / "ca.pem"),
           "key": raw_key}
    nginx.terminate()
    nginx.wait(timeout=10)
    server.shutdown()


def test_requests_through_nginx_pass_the_gate_and_direct_ones_do_not(edge):
    headers = auth_header(edge["key"])
    through_edge = requests.get(edge["base"] + "/api/v1/institution", headers=headers, verify=edge["ca"])
    assert through_edge.status_code == 200
    assert len(through_edge.headers["X-Request-Id"]) == 32  # nginx's $request_id, passed on

    direct = requests.get(edge["direct"] + "/api/v1/institution", headers=headers)
    assert direct.status_code == 403
    assert direct.json()["error"] == "Forbidden: request did not come through the official endpoint"

    spoofed = requests.get(edge["direct"] + "/api/v1/institution",
                           headers={**headers, "X-Edge-Auth": "guess"})
    assert spoofed.status_code == 403


def test_nginx_rate_limits_floods_with_a_json_429(edge):
    """120 requests side by side: a flood that outruns 20/s with a burst of 40 however slowly each is served
    (one after the other, on a loaded machine, they could all stay under the rate)."""
    def fetch(_) -> requests.Response:
        return requests.get(edge["base"] + "/api/v1/openapi.json", verify=edge["ca"])

    with ThreadPoolExecutor(max_workers=12) as pool:
        responses = list(pool.map(fetch, range(120)))

    refused = [response for response in responses if response.status_code == 429]
    assert refused, [response.status_code for response in responses]
    assert all(response.json()["code"] == 429 and response.headers["Retry-After"] == "1" for response in refused)
