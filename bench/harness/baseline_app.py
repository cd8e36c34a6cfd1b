"""The minimal-Flask baseline of the load benchmarks: every path answers 200 with a fixed JSON body of
BASELINE_BODY_BYTES bytes (the size of the Karibu response it stands beside), on the same gunicorn settings.

    BASELINE_BODY_BYTES=23000 gunicorn -w 2 --threads 4 bench.harness.baseline_app:app
"""
from __future__ import annotations

import os

from flask import Flask, Response

app = Flask(__name__)
_BODY = b'{"data":"' + b"x" * max(0, int(os.environ.get("BASELINE_BODY_BYTES", "1000")) - 11) + b'"}'


@app.route("/", defaults={"path": ""}, methods=["GET", "POST", "PATCH"])
@app.route("/<path:path>", methods=["GET", "POST", "PATCH"])
def answer(path: str) -> Response:
    return Response(_BODY, mimetype="application/json")
