"""Composition root: `create_app()` wires core, api, portal and jobs. Nothing imports this module back."""
from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

from flask import Flask, appcontext_pushed, g, request
from flask.cli import FlaskGroup
from flask_babel import Babel
from flask_wtf import CSRFProtect
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

import api
import core.models  # noqa: F401  (every model registered before migrations or queries run)
import portal
from api.callbacks import CALLBACKS_PREFIX, callbacks_bp
from api.errors import database_unavailable, handle_api_exception
from api.json_provider import OrjsonProvider
from cli import COMMANDS
from core.applications.bulkheads import SHARED_PLACES, SharedPlaces
from core.audit.recording import AuditEntry, record_request, redacted_request_path
from core.errors import InvalidInput
from core.config import INSTANCE_DIR, ConfigurationError, Settings, SettingsConfig, check_startup_settings
from core.db import DeferredMigrate, db, discard_session, is_database_outage
from core.i18n import compile_catalogues
from core.redis_faults import REQUEST_FAULTS, RequestFaults, count_rate_limiter_faults
from core.secret_key import check_fallback_keys, resolve_secret_key, warn_about_readable_dotenv
from jobs.cli import worker_command
from ops.health import health_bp
from ops.input_guard import GuardedBodyMiddleware, UnreadableBody, undecodable_input
from ops.logs import configure_logging, redact_access_lines
from ops.metrics import count_rate_limit_refusal, instrument_requests, metrics_bp
from portal.errors import database_unavailable_page, html_error
from portal.i18n import select_locale
from portal.limiter import limiter, probe_storage_once_per_request
from portal.public.views import public_bp
from portal.security import login_manager
from portal.settings.brand_assets import bp as brand_bp

REQUEST_ID_HEADER = "X-Request-Id"
_ACCEPTABLE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")

# The web extensions only this module sets up: every form posted to the portal and the public pages carries a
# CSRF token (the API and the payment callbacks are exempt), and the portal's text is translated.
csrf = CSRFProtect()
babel = Babel()
# The API counts its own requests (api/rate_limits.py): the portal's Flask-Limiter leaves its paths alone.
limiter.request_filter(api.is_api_request)
# The request-scoped state core keeps in context variables of its own (core reads no `flask.g`), each with the
# class of its value: a fresh one per app context (a request, a job, a command).
REQUEST_STATE = ((REQUEST_FAULTS, RequestFaults), (SHARED_PLACES, SharedPlaces))


class KaribuFlask(Flask):
    config: SettingsConfig
    config_class = SettingsConfig  # the app's `Settings` live in its config: core.config.settings()


def create_app(overrides: dict | None = None) -> Flask:
    """The app; `overrides` (tests, benchmarks) win over the environment and `.env`, for settings and for
    Flask's own keys alike."""
    app = KaribuFlask(__name__, template_folder="templates", static_folder="static", instance_relative_config=True,
                      instance_path=str(INSTANCE_DIR))
    register_request_state(app)
    settings = Settings.from_environment(overrides)
    app.config.use(settings)
    app.config.update(overrides or {})  # Flask's keys (TESTING, SQLALCHEMY_DATABASE_URI, …) too
    app.json = OrjsonProvider(app)
    app.json.sort_keys = False  # records keep the documented field order
    os.makedirs(app.instance_path, exist_ok=True)  # home of the default SQLite file and documents
    if settings.PROXY_COUNT:
        # Behind the edge (deploy/nginx.conf): the client address is the one the trusted proxies saw.
        proxies = settings.PROXY_COUNT
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    # a body the server cannot read is a 400
    app.wsgi_app = GuardedBodyMiddleware(app.wsgi_app, read_timeout=settings.REQUEST_BODY_TIMEOUT_SECONDS)
    configure_logging(app, log_format=settings.LOG_FORMAT, level=settings.LOG_LEVEL)
    check_startup_settings(settings)
    app.config["SECRET_KEY"] = resolve_secret_key(settings.SECRET_KEY, Path(settings.SECRET_KEY_FILE), app.logger)
    check_fallback_keys(settings.SECRET_KEY_FALLBACKS, app.config["SECRET_KEY"], app.logger)
    # Flask signs sessions under the key ring itself (its SECRET_KEY_FALLBACKS); Flask-WTF is given it, same order.
    app.config["WTF_CSRF_SECRET_KEY"] = [*reversed(settings.SECRET_KEY_FALLBACKS), app.config["SECRET_KEY"]]
    warn_about_readable_dotenv(Path(".env"), app.logger)  # the file Settings.from_environment read
    if settings.METRICS_ENABLED:
        instrument_requests(app)
    register_request_id(app)
    register_audit(app)
    register_input_guard(app)
    register_extensions(app)
    register_blueprints(app)
    register_errorhandlers(app)
    register_commands(app)
    redact_access_lines(app)
    return app


def register_request_state(app: Flask) -> None:
    """Core's request-scoped state (`REQUEST_STATE`: whether this request met a Redis fault, whether it holds the
    bulkheads' shared places), fresh for each app context: set when it is pushed, reset when it is torn down."""
    appcontext_pushed.connect(_enter_request_state, app)
    app.teardown_appcontext(_leave_request_state)


def _enter_request_state(_app: Flask, **_extra) -> None:
    # A context pushed again (the same `g`) keeps its state.
    states = g.setdefault("karibu_request_state", tuple(new() for _, new in REQUEST_STATE))
    g.setdefault("karibu_request_state_tokens", []).append(
        [variable.set(state) for (variable, _), state in zip(REQUEST_STATE, states)])


def _leave_request_state(_exc: BaseException | None) -> None:
    pushes = g.pop("karibu_request_state_tokens", None)
    for token in pushes[0] if pushes else ():  # the first push's: back to the values before this context
        token.var.reset(token)


def register_request_id(app: Flask) -> None:
    """Every response carries X-Request-Id (the caller's, when it is a sane value, else a new one)."""
    @app.before_request
    def assign_request_id():
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        g.request_id = incoming if _ACCEPTABLE_REQUEST_ID.match(incoming) else uuid.uuid4().hex

    @app.after_request
    def expose_request_id(response):
        response.headers[REQUEST_ID_HEADER] = g.get("request_id") or uuid.uuid4().hex
        return response


def register_audit(app: Flask) -> None:
    """The one writer of audit rows: after each request that declared an `AuditEntry` in `g.audit`, its path with
    secret-named parameters redacted."""
    @app.before_request
    def start_clock():
        g.request_started = time.perf_counter()

    @app.after_request
    def write_audit_row(response):
        entry = g.pop("audit", None)
        if entry is not None:
            started = g.get("request_started", time.perf_counter())
            record_request(
                entry, status=response.status_code, request_id=g.get("request_id", ""), method=request.method,
                path=redacted_request_path(request.path, request.url_rule and request.url_rule.rule,
                                           request.view_args),
                query=request.query_string.decode("latin-1"),
                duration_ms=int((time.perf_counter() - started) * 1000),
                client_ip=request.remote_addr or "", user_agent=request.user_agent.string or "")
        return response


def register_input_guard(app: Flask) -> None:
    """First of the request hooks: input that is not text, or a body that cannot be read, is refused with a 400
    in the path's shape and audited (anonymous: sign-in is not read yet)."""
    @app.before_request
    def refuse_input_that_is_not_text():
        try:
            fault = undecodable_input(request._get_current_object())
        except UnreadableBody as unreadable:
            fault = unreadable.errors[0]
        if fault is None:
            return None
        if request.path.startswith((api.API_PREFIX, CALLBACKS_PREFIX + "/")):
            source = "api" if request.path.startswith(api.API_PREFIX) else "callback"
        else:
            source = "public" if request.blueprint == public_bp.name else "portal"
        g.audit = AuditEntry(source=source, action="request.refused", target=f"{fault['location']}: {fault['name']}")
        raise InvalidInput(fault["message"], errors=[fault])


def register_extensions(app: Flask) -> None:
    """The database (core), then the web layer's: sign-in (portal), CSRF, rate limits (portal), translations."""
    db.init_app(app)
    # Runs before Flask-SQLAlchemy's own `session.remove()` (teardowns run last-registered first): a rollback
    # that fails on a dead connection is handled here, never raised to the WSGI server as its HTML 500.
    app.teardown_appcontext(lambda _exc: discard_session())
    DeferredMigrate(app, directory=str(app.root_path + "/migrations"))
    login_manager.init_app(app)
    csrf.init_app(app)
    app.config.setdefault("RATELIMIT_ON_BREACH_CALLBACK", count_rate_limit_refusal)
    limiter.init_app(app)
    probe_storage_once_per_request()
    translations = compile_catalogues(Path(app.instance_path) / "translations")
    babel.init_app(app, locale_selector=select_locale, default_translation_directories=str(translations))
    count_rate_limiter_faults()


def register_blueprints(app: Flask) -> None:
    csrf.exempt(api.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(health_bp)
    app.register_blueprint(metrics_bp)
    app.register_blueprint(portal.bp)
    csrf.exempt(callbacks_bp)
    app.register_blueprint(callbacks_bp)
    app.register_blueprint(public_bp)
    app.register_blueprint(brand_bp)


def register_errorhandlers(app: Flask) -> None:
    def dispatch(exc: Exception):
        if isinstance(exc, HTTPException) and exc.code is not None and exc.code < 400:
            return exc  # routing redirects are not errors
        api_or_callback = request.path.startswith((api.API_PREFIX, CALLBACKS_PREFIX + "/"))
        if is_database_outage(exc):
            # An outage, not a bug: 503 with Retry-After (the session's dead connection is dropped first).
            app.logger.warning("database unavailable in request %s (%s)", g.get("request_id", "-"),
                               type(exc).__name__)
            discard_session()
            return database_unavailable() if api_or_callback else database_unavailable_page()
        if api_or_callback:
            return handle_api_exception(exc)
        return html_error(exc)

    app.register_error_handler(Exception, dispatch)


def register_commands(app: Flask) -> None:
    for command in (*COMMANDS, worker_command):
        app.cli.add_command(command)


try:
    app = create_app()
except ConfigurationError as error:  # a clear message and exit status 1, not a traceback
    raise SystemExit(f"Karibu cannot start: {error}") from None


def main() -> None:
    """The `karibu` console script: the same commands as `flask --app wsgi`."""
    FlaskGroup(create_app=lambda: app)(prog_name="karibu")
