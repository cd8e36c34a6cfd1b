"""`flask --app wsgi mail-sink`, `sms-gateway-stand-in` and `webhook-receiver`: local servers that messages and
webhooks go to in development."""
from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from core.config import settings
from core.scoping import InstitutionScope
from core.webhooks.endpoints import get_endpoint, signing_secret


def serve_until_stopped(server) -> None:
    """Serve a development server until Ctrl-C or SIGTERM (scripts/run.sh stops its children so), then close it."""
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@click.command("mail-sink")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (keep it on loopback).")
@click.option("--port", default=8025, show_default=True, type=int, help="SMTP port.")
@click.option("--inbox-port", default=8024, show_default=True, type=int,
              help="Port of the inbox page (http://HOST:PORT/); 0 picks a free one.")
@click.option("--directory", default=None, help="Where to keep received mail [default: instance/mail].")
@with_appcontext
def mail_sink_command(host: str, port: int, inbox_port: int, directory: str | None) -> None:
    """Accept every email over SMTP, keep it as a .eml file (development: MAIL_SERVER=127.0.0.1) and show the
    kept emails on an inbox page, as their readers see them, links clickable."""
    from devtools.mail_inbox import create_server
    from devtools.mail_sink import start_sink  # aiosmtpd and asyncio: only in this development command

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    target = Path(directory) if directory else Path(current_app.instance_path) / "mail"
    controller = start_sink(host, port, target)
    server = create_server(host, inbox_port, target)
    click.echo(f"Mail sink listening on smtp://{host}:{port}; messages kept in {target}; "
               f"inbox at http://{host}:{server.server_port}/")
    try:
        serve_until_stopped(server)
    finally:
        controller.stop()


@click.command("sms-gateway-stand-in")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (keep it on loopback).")
@click.option("--port", default=8026, show_default=True, type=int, help="Port; 0 picks a free one.")
@with_appcontext
def sms_gateway_command(host: str, port: int) -> None:
    """Serve a stand-in for Africa's Talking's SMS API, accepting the configured username and API key."""
    from devtools.sms_gateway import create_server

    config = settings()
    server, _ = create_server(host, port, config.AFRICASTALKING_USERNAME or "sandbox",
                              config.AFRICASTALKING_API_KEY or "stand-in-key")
    click.echo(f"SMS gateway stand-in on http://{host}:{server.server_port}/version1/messaging")
    serve_until_stopped(server)


@click.command("webhook-receiver")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (keep it on loopback).")
@click.option("--port", default=8766, show_default=True, type=int, help="Port; 0 picks a free one.")
@with_appcontext
def webhook_receiver_command(host: str, port: int) -> None:
    """Receive webhooks for the demo and show them at http://HOST:PORT/, each signature checked with the
    secret of its institution's endpoint (WEBHOOK_DEV_RECEIVER_URL=http://HOST:PORT lets the portal use it)."""
    from devtools.webhook_receiver import create_server

    app = current_app._get_current_object()

    def secret_for(institution_id: str) -> str | None:
        with app.app_context():
            endpoint = get_endpoint(InstitutionScope(institution_id))
            return signing_secret(endpoint) if endpoint is not None else None

    server, _ = create_server(host, port, secret_for)
    click.echo(f"Development webhook receiver on http://{host}:{server.server_port}/ (deliveries to /hooks/ID)")
    serve_until_stopped(server)


DEV_SERVER_COMMANDS = (mail_sink_command, sms_gateway_command, webhook_receiver_command)
