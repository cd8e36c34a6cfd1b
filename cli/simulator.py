"""`flask --app wsgi registry-simulator`: serve the registry simulator for development, tests and benchmarks."""
from __future__ import annotations

import click
from flask.cli import with_appcontext

from cli.dev_servers import serve_until_stopped
from core.config import settings
from core.verification.registries import REGISTRIES
from devtools import MODES


@click.command("registry-simulator")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (keep it on loopback).")
@click.option("--port", default=8765, show_default=True, type=int, help="Port; 0 picks a free one.")
@click.option("--mode", type=click.Choice(MODES), default="normal", show_default=True,
              help="Initial behaviour of every registry (change it later with PUT /_simulator/behaviour).")
@click.option("--delay", default=0.0, show_default=True, type=float, help="Seconds to wait in 'slow' mode.")
@click.option("--status", default=500, show_default=True, type=int, help="HTTP status sent in 'error' mode.")
@click.option("--quiet", is_flag=True, help="Do not log each request.")
@with_appcontext
def registry_simulator_command(host: str, port: int, mode: str, delay: float, status: int, quiet: bool) -> None:
    """Serve simulated NESA, UNEB and KNEC registry APIs, accepting the tokens configured for Karibu."""
    from devtools.registry_simulator import create_server  # its records and server: only in this command

    tokens = {code: getattr(settings(), f"REGISTRY_{code}_TOKEN") for code in REGISTRIES}
    server, simulator = create_server(host, port, tokens, log_requests=not quiet)
    simulator.state.set(mode, delay=delay, status=status)
    base = f"http://{host}:{server.server_port}"
    click.echo(f"Registry simulator listening on {base} "
               + ", ".join(f"{code} at {base}/{code.lower()}" for code in REGISTRIES), err=False)
    click.echo(f"Mode: {mode}. Records: {base}/_simulator/records", err=False)
    serve_until_stopped(server)
