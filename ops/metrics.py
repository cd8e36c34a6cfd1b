"""`/metrics` in Prometheus text format, only for clients in `METRICS_ALLOWED_NETWORKS`, and the request metrics
(count and latency per Flask endpoint and status; rate-limit refusals).
"""
from __future__ import annotations

import ipaddress
import time

from flask import Blueprint, Flask, Response, abort, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess

from core.config import settings
from core.metrics import HTTP_LATENCY, HTTP_REQUESTS, RATE_LIMIT_REFUSALS, DatabaseCollector

metrics_bp = Blueprint("metrics", __name__)
UNMATCHED = "unmatched"  # requests that matched no route (404s of unknown paths, 405s)
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def allowed_networks() -> list:
    networks = current_app.extensions.get("karibu_metrics_networks")
    if networks is None:
        raw = settings().METRICS_ALLOWED_NETWORKS
        networks = [ipaddress.ip_network(part.strip(), strict=False) for part in raw.split(",") if part.strip()]
        current_app.extensions["karibu_metrics_networks"] = networks
    return networks


def client_allowed(address: str | None) -> bool:
    try:
        client = ipaddress.ip_address((address or "").split("%")[0])
    except ValueError:
        return False
    if client.version == 6 and client.ipv4_mapped:
        client = client.ipv4_mapped
    return any(client in network for network in allowed_networks())


class _DefaultRegistry:
    """This process's own metrics, when not running under a multiprocess server."""

    def collect(self):
        yield from REGISTRY.collect()


def scrape() -> bytes:
    registry = CollectorRegistry()
    if settings().PROMETHEUS_MULTIPROC_DIR:
        multiprocess.MultiProcessCollector(registry)  # every gunicorn worker's values, added up
    else:
        registry.register(_DefaultRegistry())
    registry.register(DatabaseCollector(
        on_error=lambda gauge, error: current_app.logger.warning("Metric %s not collected: %s", gauge.name, error)))
    return generate_latest(registry)


@metrics_bp.get("/metrics")
def metrics():
    if not settings().METRICS_ENABLED or not client_allowed(request.remote_addr):
        abort(404)  # not advertised to the outside
    return Response(scrape(), mimetype=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})


def count_rate_limit_refusal(_limit) -> None:
    """Flask-Limiter's `on_breach` hook: one refusal, labelled by the endpoint that refused."""
    RATE_LIMIT_REFUSALS.labels(endpoint=request.endpoint or UNMATCHED).inc()


def instrument_requests(app: Flask) -> None:
    @app.before_request
    def _start_metrics_clock():
        g.metrics_started = time.perf_counter()

    @app.after_request
    def _observe_request(response):
        started = g.get("metrics_started")
        if started is not None:
            endpoint = request.endpoint or UNMATCHED
            method = request.method if request.method in KNOWN_METHODS else "other"
            HTTP_REQUESTS.labels(endpoint, method, str(response.status_code)).inc()
            HTTP_LATENCY.labels(endpoint, method).observe(time.perf_counter() - started)
        return response
