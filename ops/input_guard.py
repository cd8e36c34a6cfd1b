"""The input guard at the edge: `undecodable_input(request)` finds text that is not UTF-8 (or holds NUL or
U+FFFD), `GuardedBodyMiddleware` turns a failed or short body read into `UnreadableBody` (a 400).
"""
from __future__ import annotations

from urllib.parse import unquote_to_bytes

from flask_babel import gettext as _
from werkzeug.wsgi import LimitedStream

from core.errors import InvalidInput, problem

# What a decoder puts for bytes that were not UTF-8 (werkzeug decodes cookies, form fields and file names so,
# encoded surrogates included, and no lone surrogate is left to look for): refused wherever it is found, like the
# bytes it stands for.
_REPLACEMENT = "\ufffd"
_REPLACEMENT_BYTES = _REPLACEMENT.encode("utf-8")


def _bytes_are_text(raw: bytes) -> bool:
    if b"\x00" in raw or _REPLACEMENT_BYTES in raw:
        return False
    try:
        raw.decode("utf-8")  # strict: also refuses encoded surrogates and overlong forms (%C0%80)
    except UnicodeDecodeError:
        return False
    return True


def _wsgi_string_is_text(value: str) -> bool:
    """A WSGI "bytes as latin-1" string (PATH_INFO, QUERY_STRING, header values)."""
    if value.isascii():
        return "\x00" not in value
    try:
        return _bytes_are_text(value.encode("latin-1"))
    except UnicodeEncodeError:  # not a WSGI string at all
        return False


def _percent_encoded_is_text(value: bytes) -> bool:
    """A query string or url-encoded form body: its names and values once %-decoded."""
    if b"%" not in value and value.isascii():
        return b"\x00" not in value
    return _bytes_are_text(unquote_to_bytes(value.replace(b"+", b" ")))


def _decoded_is_text(value: str) -> bool:
    """A value werkzeug decoded (a cookie, a form field, a file name)."""
    return "\x00" not in value and _REPLACEMENT not in value


def _fault(location: str, name: str) -> dict:
    return problem(location, name, _("%(name)s must be text (UTF-8) without NUL characters.", name=name))


def undecodable_input(request) -> dict | None:
    """The first part of `request` (the request object itself, not Flask's proxy: this runs on every request)
    that is not text, as an error problem; None when all of it is."""
    environ = request.environ
    if not _wsgi_string_is_text(environ.get("PATH_INFO", "")):
        return _fault("path", "path")
    if not _percent_encoded_is_text(environ.get("QUERY_STRING", "").encode("latin-1", "replace")):
        return _fault("query", "query string")
    headers = [(key, value) for key, value in environ.items()
               if key[:5] == "HTTP_" or key == "CONTENT_TYPE" or key == "CONTENT_LENGTH"]
    together = "".join(value for _, value in headers if isinstance(value, str))
    if not (together.isascii() and "\x00" not in together):
        for key, value in headers:
            if not (isinstance(value, str) and _wsgi_string_is_text(value)):
                return _fault("header", key.removeprefix("HTTP_").replace("_", "-").title())
    if "HTTP_COOKIE" in environ:
        for name, value in request.cookies.items(multi=True):
            if not (_decoded_is_text(name) and _decoded_is_text(value)):
                return _fault("header", "Cookie")
    mimetype = request.mimetype
    if mimetype == "application/x-www-form-urlencoded":
        if not _percent_encoded_is_text(request.get_data(cache=True)):
            return _fault("body", "form")
    elif mimetype == "multipart/form-data":
        for name, value in request.form.items(multi=True):
            if not (_decoded_is_text(name) and _decoded_is_text(value)):
                return _fault("body", "form")
        for name, upload in request.files.items(multi=True):
            if not (_decoded_is_text(name) and _decoded_is_text(upload.filename or "")):
                return _fault("body", "form")
    return None


class UnreadableBody(InvalidInput):
    """The server could not read the request body (malformed chunked encoding, shorter than its Content-Length, or
    the client stalled)."""

    def __init__(self):
        message = _("The request body could not be read: its chunked encoding is malformed or it ended early.")
        super().__init__(message, errors=[problem("body", "body", message)])


class _GuardedInput:
    """`wsgi.input` whose read failures are `UnreadableBody` (anything else is the server's stream's own)."""

    def __init__(self, stream):
        self._stream = stream

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _guarded(self, method, *args):
        try:
            return method(*args)
        except UnreadableBody:
            raise
        except Exception as error:  # the server's own exceptions: OSError, gunicorn's ParseException, …
            raise UnreadableBody() from error

    def read(self, *args):
        return self._guarded(self._stream.read, *args)

    def readline(self, *args):
        return self._guarded(self._stream.readline, *args)

    def readlines(self, *args):
        return self._guarded(self._stream.readlines, *args)

    def __iter__(self):
        return iter(self.readline, b"")


class _DeclaredLength(LimitedStream):
    """The body up to its Content-Length: one that ends earlier (or whose read fails) is `UnreadableBody`."""

    def on_disconnect(self, error: Exception | None = None) -> None:
        raise UnreadableBody() from error


def _is_chunked(environ) -> bool:
    """Whether the body comes in chunks (its end is the last chunk, not a length)."""
    return "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()


def _declared_length(environ) -> int | None:
    """The body's Content-Length, when it has one the server reads it by (not chunked)."""
    if _is_chunked(environ):
        return None
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    return length if length >= 0 else None


class GuardedBodyMiddleware:
    """WSGI middleware: the request body is read through `_GuardedInput`, and ends where its Content-Length says
    (`_DeclaredLength`: shorter is unreadable); under gunicorn a client silent for `read_timeout` seconds while the
    body is read makes it unreadable too."""

    def __init__(self, wsgi_app, read_timeout: float):
        self.wsgi_app = wsgi_app
        self.read_timeout = read_timeout

    def __call__(self, environ, start_response):
        stream = environ.get("wsgi.input")
        if stream is None:
            return self.wsgi_app(environ, start_response)
        length = _declared_length(environ)
        environ["wsgi.input"] = _GuardedInput(stream if length is None else _DeclaredLength(stream, length))
        client = environ.get("gunicorn.socket")
        if client is None or not (length or _is_chunked(environ)):  # no body to wait for
            return self.wsgi_app(environ, start_response)
        client.settimeout(self.read_timeout)
        try:
            return self.wsgi_app(environ, start_response)
        finally:
            client.settimeout(None)  # the response is written as gunicorn writes it
