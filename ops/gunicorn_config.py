"""gunicorn settings for Karibu: `gunicorn -c python:ops.gunicorn_config wsgi:app` (see docs/operations.md).

Read from `core.config.Settings`; overridable on the command line or with GUNICORN_CMD_ARGS.
"""
import os
import shutil
import tempfile

from core.config import ConfigurationError, Settings

try:
    _settings = Settings.from_environment()
except ConfigurationError as error:  # the message the app would give, not a traceback
    raise SystemExit(f"Karibu cannot start: {error}") from None

bind = _settings.KARIBU_BIND
# Processes use the cores; 2 threads keep a worker useful while one request waits (docs/design-notes.md, ops).
workers = _settings.WEB_CONCURRENCY
threads = _settings.KARIBU_THREADS
# A worker takes a connection only while one of its threads is free, and answers one request per connection:
# a request waits in the kernel's queue for the first free thread of any worker, never behind a long request
# in a busy one (docs/performance.md, "Short requests behind long ones"). nginx (deploy/) keeps its own
# connections to clients and sends gunicorn whole requests.
worker_connections = threads
keepalive = 0
timeout = 60
graceful_timeout = 30
# Karibu logs one line per request itself (LOG_FORMAT=json for collectors); gunicorn's access log would
# repeat it.
accesslog = None
errorlog = "-"
if _settings.LOG_FORMAT == "json":
    # gunicorn's own lines (start, worker boots and exits) as JSON too, like the app's.
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {
            "()": "pythonjsonlogger.json.JsonFormatter", "fmt": "{asctime}{levelname}{name}{message}", "style": "{",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            "datefmt": "%Y-%m-%dT%H:%M:%S%z"}},
        "handlers": {name: {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
                     for name in ("console", "error_console")},  # the names gunicorn's defaults refer to
        "loggers": {"gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False}},
    }

# prometheus-client reads the directory from the environment when it is imported (in the workers, which
# inherit this process's environment): exported here, before anything imports it. By default one directory
# per master process, removed when it exits.
_made_here = not _settings.PROMETHEUS_MULTIPROC_DIR
metrics_directory = (_settings.PROMETHEUS_MULTIPROC_DIR
                     or os.path.join(tempfile.gettempdir(), f"karibu-metrics-{os.getpid()}"))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_directory

# The lock files of the node's bulkhead places (core.applications.bulkheads), shared by this master's workers
# through their environment; by default one directory per master, removed when it exits.
_bulkheads_made_here = not _settings.BULKHEAD_NODE_DIR
bulkheads_directory = (_settings.BULKHEAD_NODE_DIR
                       or os.path.join(tempfile.gettempdir(), f"karibu-bulkheads-{os.getpid()}"))
os.environ["BULKHEAD_NODE_DIR"] = bulkheads_directory


def on_starting(server):
    """Counters of an earlier run must not be added in: start from an empty directory. The bulkheads' lock
    directory is made now, before the workers need it."""
    directory = metrics_directory
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory, exist_ok=True)
    os.makedirs(bulkheads_directory, mode=0o700, exist_ok=True)


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if _made_here:
        shutil.rmtree(metrics_directory, ignore_errors=True)
    if _bulkheads_made_here:
        shutil.rmtree(bulkheads_directory, ignore_errors=True)
