"""Baseline WSGI app for the zip benchmark: the same files, concatenated, over the same HTTP stack.

``BENCH_FILE_LIST`` names a text file with one path per line. No Flask, no zip, no
database: only reading the files and sending them, as the zip endpoint must.
"""
import os

CHUNK = 1024 * 1024


def app(environ, start_response):
    with open(os.environ["BENCH_FILE_LIST"]) as listing:
        paths = listing.read().split()
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Length", str(sum(os.path.getsize(p) for p in paths)))])
    return _chunks(paths)


def _chunks(paths):
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                yield chunk
