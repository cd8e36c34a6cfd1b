"""gunicorn settings for Karibu: `gunicorn -c deploy/gunicorn.conf.py wsgi:app` (see docs/operations.md).

Metrics: prometheus-client's multiprocess mode needs `PROMETHEUS_MULTIPROC_DIR` set before the app is
imported. It is emptied when gunicorn starts, and a dead worker's live gauges are dropped by `child_exit`.
Everything here can be overridden on the command line or with GUNICORN_CMD_ARGS.
"""
import os
import shutil
import tempfile

from prometheus_client import multiprocess

bind = os.environ.get("KARIBU_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("KARIBU_THREADS", "4"))
timeout = 60
graceful_timeout = 30
# Karibu logs one line per request itself (LOG_FORMAT=json for collectors); gunicorn's access log would
# repeat it.
accesslog = None
errorlog = "-"

os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", os.path.join(tempfile.gettempdir(), f"karibu-metrics-{os.getuid()}"))


def on_starting(server):
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    shutil.rmtree(directory, ignore_errors=True)  # counters of an earlier run must not be added in
    os.makedirs(directory, exist_ok=True)


def child_exit(server, worker):
    multiprocess.mark_process_dead(worker.pid)
