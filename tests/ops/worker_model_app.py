"""A WSGI app for tests of the shipped gunicorn settings: `/slow?seconds=N` sleeps, anything else answers at once."""
import time
from urllib.parse import parse_qs


def app(environ, start_response):
    if environ["PATH_INFO"] == "/slow":
        time.sleep(float(parse_qs(environ["QUERY_STRING"]).get("seconds", ["1"])[0]))
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
