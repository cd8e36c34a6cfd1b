"""The development mail sink's inbox page: the `.eml` files it keeps, newest first, each shown as its reader sees
it (the text part with its links clickable, the HTML part in a sandboxed frame). Never for production."""
from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage
from pathlib import Path

from markupsafe import Markup, escape
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

SHOWN = 200
URL = re.compile(r"https?://[^\s<>\"']+[^\s<>\"'.,;:!?)]")
# The HTML part runs no script, and a link in it opens in a new tab (the frame cannot navigate this page).
FRAME_SANDBOX = "allow-popups allow-popups-to-escape-sandbox"
PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data: http: https:; frame-ancestors 'none'"


def _read(path: Path) -> EmailMessage:
    return email.message_from_bytes(path.read_bytes(), policy=email.policy.default)


def _part(message: EmailMessage, subtype: str) -> str | None:
    part = message.get_body(preferencelist=(subtype,))
    return part.get_content() if part is not None and part.get_content_subtype() == subtype else None


def linked(text: str) -> Markup:
    """`text` escaped, each http(s) address in it a link."""
    pieces, last = [], 0
    for match in URL.finditer(text):
        pieces += [escape(text[last:match.start()]), Markup('<a href="{0}">{0}</a>').format(match.group())]
        last = match.end()
    pieces.append(escape(text[last:]))
    return Markup("").join(pieces)


class MailInbox:
    """The WSGI application over `directory` (the sink's `.eml` files)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.url_map = Map([
            Rule("/", endpoint="list", methods=["GET"]),
            Rule("/messages/<name>", endpoint="message", methods=["GET"]),
            Rule("/favicon.ico", endpoint="no_icon", methods=["GET"]),
        ])

    def files(self) -> list[Path]:
        """The kept emails, newest first."""
        found = [path for path in self.directory.glob("*.eml") if path.is_file()]
        return sorted(found, key=lambda path: (path.stat().st_mtime, path.name), reverse=True)[:SHOWN]

    def __call__(self, environ, start_response):
        adapter = self.url_map.bind_to_environ(environ)
        try:
            endpoint, values = adapter.match()
            response = getattr(self, f"on_{endpoint}")(Request(environ), **values)
        except HTTPException as error:
            response = error.get_response(environ)
        response.headers["Content-Security-Policy"] = PAGE_POLICY
        response.headers["Referrer-Policy"] = "no-referrer"
        return response(environ, start_response)

    def on_no_icon(self, request: Request) -> Response:
        return Response(status=204)

    def on_list(self, request: Request) -> Response:
        rows = []
        for path in self.files():
            message = _read(path)
            rows.append(Markup(
                '<tr><td>{date}</td><td>{to}</td><td><a href="/messages/{name}">{subject}</a></td></tr>').format(
                date=message["Date"] or "", to=message["To"] or "", name=path.name,
                subject=message["Subject"] or "(no subject)"))
        body = Markup("").join(rows) or Markup(
            '<tr><td colspan="3">No email yet. In the portal, send a decision from an applicant\'s file; the '
            "email appears here once the worker has sent it (reload the page).</td></tr>")
        return _page("Development inbox", Markup(LIST).format(rows=body, directory=str(self.directory)))

    def on_message(self, request: Request, name: str) -> Response:
        path = self.directory / name
        if not name.endswith(".eml") or "/" in name or name.startswith(".") or not path.is_file():
            raise NotFound()
        message = _read(path)
        text, html = _part(message, "plain"), _part(message, "html")
        parts = []
        if text is not None:
            parts.append(Markup('<section><h2>Text</h2><pre class="text">{}</pre></section>').format(linked(text)))
        if html is not None:
            framed = '<base target="_blank">' + html
            parts.append(Markup('<section><h2>HTML</h2><iframe title="HTML part" sandbox="{}" srcdoc="{}">'
                                "</iframe></section>").format(FRAME_SANDBOX, framed))
        return _page(message["Subject"] or "(no subject)", Markup(MESSAGE).format(
            subject=message["Subject"] or "(no subject)", sender=message["From"] or "", to=message["To"] or "",
            date=message["Date"] or "", parts=Markup("").join(parts)))


def _page(title: str, content: Markup) -> Response:
    html = Markup(PAGE).format(title=title, content=content)
    return Response(str(html), content_type="text/html; charset=utf-8")


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · Karibu development inbox</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; margin: 1.5rem; color: #1a1a1a; }}
table {{ border-collapse: collapse; width: 100%; }} th, td {{ text-align: left; padding: .4rem; border-bottom: 1px solid #ccc;
vertical-align: top; }} .note {{ background: #fff4d6; padding: .5rem .75rem; }}
pre {{ white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: .75rem; }}
iframe {{ width: 100%; height: 32rem; border: 1px solid #ccc; }} dt {{ font-weight: 600; }}
</style></head><body><main>{content}</main></body></html>
"""

LIST = """<h1>Development inbox</h1>
<p class="note">For the demo only: every email the development mail sink received, newest first, as its reader
sees it (kept in <code>{directory}</code>). Reload the page for new ones.</p>
<table><caption>Received emails, newest first</caption>
<thead><tr><th scope="col">Date</th><th scope="col">To</th><th scope="col">Subject</th></tr></thead>
<tbody>{rows}</tbody></table>
"""

MESSAGE = """<p><a href="/">← All emails</a></p>
<h1>{subject}</h1>
<dl><dt>From</dt><dd>{sender}</dd><dt>To</dt><dd>{to}</dd><dt>Date</dt><dd>{date}</dd></dl>
{parts}
"""


class _QuietRequestHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs) -> None:
        pass


def create_server(host: str, port: int, directory: Path) -> BaseWSGIServer:
    """A threaded HTTP server for the inbox page; `port=0` picks a free port (see `server.server_port`)."""
    server = make_server(host, port, MailInbox(directory), threaded=True, request_handler=_QuietRequestHandler)
    server.daemon_threads = True
    return server
