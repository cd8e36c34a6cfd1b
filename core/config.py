"""Configuration from environment variables (and a `.env` file in development), read by every package through
`settings()`; each setting is documented in the README."""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dotenv import dotenv_values
from flask import Config, current_app
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _instance_dir() -> Path:
    """`KARIBU_INSTANCE_DIR`, else the checkout's `instance/` when run from a checkout, else `./instance`
    (an installed package must not write into site-packages)."""
    if os.environ.get("KARIBU_INSTANCE_DIR"):
        return Path(os.environ["KARIBU_INSTANCE_DIR"]).resolve()
    if (PROJECT_ROOT / "pyproject.toml").exists():
        return PROJECT_ROOT / "instance"
    return Path.cwd() / "instance"


INSTANCE_DIR = _instance_dir()


class Settings(BaseModel):
    """Every setting with its type and default; `from_environment()` reads them."""

    # Assignments are validated too: a test's override of a running app's setting is converted (and checked)
    # like a value read from the environment.
    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    # Core: secrets, engines, the API edge and identity
    # Empty: a random key is generated on first start into SECRET_KEY_FILE and reused (core/secret_key.py).
    SECRET_KEY: str = ""
    SECRET_KEY_FILE: str = str(INSTANCE_DIR / "secret_key")
    # Earlier keys still accepted while SECRET_KEY is rotated (comma-separated in the environment): sessions and
    # signed links made under one stay valid, ciphertexts under one stay readable; only SECRET_KEY signs and
    # encrypts (core/secret_key.py; docs/operations.md, "Rotating SECRET_KEY").
    SECRET_KEY_FALLBACKS: list[str] = []
    DATABASE_URL: str = f"sqlite:///{INSTANCE_DIR / 'karibu.db'}"
    REDIS_URL: str = "redis://localhost:6379/0"
    TRIAL_API_KEY: str = "sk_trial_demo"
    EDGE_SHARED_SECRET: str = ""
    API_RATE_LIMIT: str = "600/minute"
    # Failed API authentications per client address; when spent, every API request from it gets 429.
    API_AUTH_FAILURE_RATE_LIMIT: str = "20/minute;200/hour"
    # Seconds an API key (and its institution's standing) is kept in each process after a lookup; at most 1,
    # so a revoked key is refused within a second on every node (core/accounts/api_authentication.py). 0 turns the cache off.
    API_CREDENTIAL_CACHE_SECONDS: float = 0.5
    API_MAX_BODY_BYTES: int = 1_048_576
    OIDC_ISSUER: str = ""
    OIDC_AUDIENCE: str = ""
    OIDC_JWKS_URL: str = ""
    OIDC_INSTITUTION_CLAIM: str = "institution_id"
    LOG_LEVEL: str = "INFO"
    PROXY_COUNT: int = 0
    # Redis faults: seconds before a Redis command or connection attempt is given up (every Redis client of
    # the web app). Rate limits then count in-process until Redis answers again; queueing falls back to the
    # periodic sweep.
    REDIS_SOCKET_TIMEOUT: float = 0.5
    REDIS_CONNECT_TIMEOUT: float = 0.5
    # Public links: the address partners and applicants reach Karibu at (OpenAPI `servers`, links in messages)
    PUBLIC_BASE_URL: str = "http://127.0.0.1:8000"
    # Partner API: events feed. Events stay readable from GET /api/v1/events this many days (30 at least:
    # the documented guarantee); the retention job deletes older ones.
    EVENTS_RETENTION_DAYS: int = Field(default=30, ge=30)
    # Documents and bulk updates
    DOCUMENT_STORAGE_DIR: str = str(INSTANCE_DIR / "documents")
    EMIT_APPLICATION_UPDATED: bool = False
    # A bulk change of a whole filtered set up to this many applications runs in the request; larger ones run
    # as a background job with progress shown on the page.
    BULK_CHANGE_INLINE_LIMIT: int = Field(default=500, ge=0)
    # Record verification
    REGISTRY_NESA_URL: str = "http://127.0.0.1:8765/nesa"
    REGISTRY_NESA_TOKEN: str = "simulator-nesa-token"
    REGISTRY_UNEB_URL: str = "http://127.0.0.1:8765/uneb"
    REGISTRY_UNEB_TOKEN: str = "simulator-uneb-token"
    REGISTRY_KNEC_URL: str = "http://127.0.0.1:8765/knec"
    REGISTRY_KNEC_TOKEN: str = "simulator-knec-token"
    REGISTRY_CONNECT_TIMEOUT: float = 3.0
    REGISTRY_READ_TIMEOUT: float = 10.0
    VERIFICATION_DEFAULT_PRICE: str = "1.50"
    VERIFICATION_DEFAULT_CURRENCY: str = "USD"
    VERIFICATION_HASH_KEY: str = ""
    # Webhooks
    # Development and tests only: admit loopback/private targets (metadata addresses stay refused) and http.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: bool = False
    WEBHOOK_ALLOW_HTTP: bool = False
    # The demo only (scripts/run.sh sets it): the development webhook receiver's URL, an http URL on a loopback
    # address (http://127.0.0.1:8766). URLs on exactly that origin are accepted as webhook targets and the
    # Webhooks page offers it with one click; every other URL keeps the rules above. Empty everywhere else.
    WEBHOOK_DEV_RECEIVER_URL: str = ""
    # PEM file used instead of the system trust store to verify receivers' certificates ("" = system store).
    WEBHOOK_CA_BUNDLE: str = ""
    # Webhook reliability: how often the sweep chain looks for due deliveries whose job is missing, and how
    # often every worker runs maintenance (restart its scheduler, revive the sweep chain, sweep once); an
    # idle worker waits for jobs at most that long, so this bounds recovery after Redis loses its data.
    WEBHOOK_SWEEP_SECONDS: int = Field(default=10, ge=1)
    WORKER_MAINTENANCE_SECONDS: int = Field(default=4, ge=1)
    # A transport found down (SMTP server, SMS gateway, one webhook endpoint) is probed again after a random
    # pause between these two (seconds); its rows wait without using their own retries (core/outbox/circuit.py).
    OUTBOX_PROBE_MIN_SECONDS: float = Field(default=15.0, gt=0)
    OUTBOX_PROBE_MAX_SECONDS: float = Field(default=30.0, gt=0)
    # Staff portal
    # Failed staff sign-ins per client address and email, and per client address (Flask-Limiter syntax).
    PORTAL_LOGIN_RATE_LIMIT: str = "5/minute;20/hour"
    PORTAL_LOGIN_ADDRESS_RATE_LIMIT: str = "30/minute"
    # Failed staff sign-ins per account (per email typed, known or not), from all addresses together.
    PORTAL_LOGIN_ACCOUNT_RATE_LIMIT: str = "10/minute;50/hour"
    # "Forgot password" requests per client address, and per email typed (known or not), all counted.
    PORTAL_FORGOT_ADDRESS_RATE_LIMIT: str = "10/hour"
    PORTAL_FORGOT_EMAIL_RATE_LIMIT: str = "3/hour"
    # Wrong two-factor codes (at sign-in, and when turning two-factor off) per account, and per client address.
    PORTAL_TWO_FACTOR_RATE_LIMIT: str = "5/minute;20/hour"
    PORTAL_TWO_FACTOR_ADDRESS_RATE_LIMIT: str = "30/minute"
    # Trial verifications on the public /try page per client address.
    PORTAL_TRY_RATE_LIMIT: str = "30/minute"
    # Logo uploads per institution (each is decoded and re-encoded), accepted or refused.
    PORTAL_LOGO_UPLOAD_RATE_LIMIT: str = "10/hour"
    # Staff sessions end after this many minutes without a request (idle), and this many hours after sign-in
    # whatever the activity (absolute lifetime); defaults 12 hours and 14 days.
    PORTAL_SESSION_IDLE_MINUTES: int = Field(default=720, ge=5)
    PORTAL_SESSION_LIFETIME_HOURS: int = Field(default=336, ge=1)
    # Session cookie: set SESSION_COOKIE_SECURE=true behind TLS.
    SESSION_COOKIE_SECURE: bool = False
    SESSION_COOKIE_SAMESITE: str = "Lax"
    # Staff sign-in with the university's account (OpenID Connect, core/accounts/sso.py): a PEM file used
    # instead of the system trust store to verify the providers' certificates ("" = system store).
    SSO_CA_BUNDLE: str = ""
    # Event sources: public pages and payment callbacks
    # Shared secret of the M-Pesa aggregator: HMAC-SHA256 of the raw callback body ("" = M-Pesa refused).
    MPESA_CALLBACK_SECRET: str = ""
    # Flutterwave dashboard "secret hash", echoed in the verif-hash header ("" = Flutterwave refused).
    FLUTTERWAVE_SECRET_HASH: str = ""
    # Per client address, for the public apply form and decision-response page (POSTs only).
    PUBLIC_FORM_RATE_LIMIT: str = "20/minute"
    # Messages to applicants (docs/messages.md); their links start with PUBLIC_BASE_URL (above).
    # SMTP, with Flask-Mail's names. MAIL_SERVER "" = email not configured (scripts/run.sh starts a local sink).
    MAIL_SERVER: str = ""
    MAIL_PORT: int = 25
    MAIL_USERNAME: str = ""
    MAIL_PASSWORD: str = ""
    MAIL_USE_TLS: bool = False  # STARTTLS after connecting
    MAIL_USE_SSL: bool = False  # TLS from the first byte (port 465)
    MAIL_DEFAULT_SENDER: str = "Karibu <no-reply@karibu.localhost>"
    # Seconds an SMTP connection or command may take before the attempt counts as a temporary failure.
    MAIL_TIMEOUT: float = 15.0
    # The demo only (scripts/run.sh sets it): the development mail sink's inbox page, linked from the Messages page.
    MAIL_DEV_INBOX_URL: str = ""
    # The operator's restriction on top of proof: comma-separated domains an institution may prove and send From
    # (exact domain, case-insensitive); "" = any domain the institution proves in DNS (`sender-domains`).
    MAIL_ALLOWED_SENDER_DOMAINS: str = ""
    # The DNS server sending domains are looked up on, `host:port` ("" = the system's resolvers).
    DNS_RESOLVER: str = ""
    # DKIM: every email is signed (rsa-sha256, relaxed/relaxed) when all three are set; none set = no signature.
    # The key file is a PEM RSA private key (PKCS#1 or PKCS#8), checked at start-up (core/messages/signing.py).
    MAIL_DKIM_DOMAIN: str = ""
    MAIL_DKIM_SELECTOR: str = ""
    MAIL_DKIM_PRIVATE_KEY_FILE: str = ""
    # SMS: SMS_PROVIDER=africastalking turns it on ("" = no SMS).
    SMS_PROVIDER: str = ""
    AFRICASTALKING_USERNAME: str = ""
    AFRICASTALKING_API_KEY: str = ""
    SMS_SENDER_ID: str = ""
    # "" = the gateway's live API (its sandbox API for the username "sandbox"); the local stand-in in development.
    AFRICASTALKING_API_URL: str = ""
    # Operations: logs, metrics, readiness, retention
    # `text` (development) or `json` (one JSON object per line).
    LOG_FORMAT: str = "text"
    # Request metrics and /metrics (false: neither; for comparison benchmarks).
    METRICS_ENABLED: bool = True
    # Comma-separated networks allowed to read /metrics (client address after PROXY_COUNT).
    METRICS_ALLOWED_NETWORKS: str = "127.0.0.0/8,::1/128"
    # Seconds /readyz gives the database and Redis each.
    READINESS_TIMEOUT: float = 2.0
    # The RQ worker serves its own /metrics on this port (127.0.0.1; 0 = off).
    WORKER_METRICS_PORT: int = 0
    WORKER_METRICS_ADDRESS: str = "127.0.0.1"
    # Days rows are kept before the daily retention job deletes them (the billing ledger is never deleted).
    RETENTION_AUDIT_DAYS: int = 400
    RETENTION_WEBHOOK_DAYS: int = 90
    # Events are kept this many days past the events feed's guarantee (EVENTS_RETENTION_DAYS).
    RETENTION_EVENTS_DAYS_PAST_FEED: int = 30
    RETENTION_MESSAGES_DAYS: int = 400
    # Rows deleted per transaction (short transactions: API writes never wait long behind the purge).
    RETENTION_BATCH_SIZE: int = 5000
    # gunicorn (ops/gunicorn_config.py): address, worker processes (default: CPU cores + 1) and threads each.
    KARIBU_BIND: str = "127.0.0.1:8000"
    WEB_CONCURRENCY: int = Field(default_factory=lambda: (os.cpu_count() or 1) + 1, ge=1)
    KARIBU_THREADS: int = Field(default=2, ge=1)
    # Under gunicorn, a request body whose client sends nothing for this long is a 400 (ops/input_guard.py): a
    # client that stalls mid-body does not hold a thread for ever.
    REQUEST_BODY_TIMEOUT_SECONDS: float = Field(default=30.0, gt=0)
    # prometheus-client's directory for the metrics of gunicorn's worker processes ("" = one process, its own
    # metrics). ops/gunicorn_config.py sets it (a new directory per master when empty) and exports it to the
    # workers' environment, where prometheus-client reads it on import.
    PROMETHEUS_MULTIPROC_DIR: str = ""
    # Where the rate-limit counters are kept, Flask-Limiter's and the API's own (api/rate_limits.py): a
    # Flask-Limiter storage URI ("" = REDIS_URL; memory:// counts per process), and the prefix of their keys
    # (several deployments sharing one Redis database).
    RATELIMIT_STORAGE_URI: str = ""
    RATELIMIT_KEY_PREFIX: str = ""
    # Bulkheads (core/applications/bulkheads.py): expensive requests running at once per process, by kind (0 = no limit):
    # text searches and exact counts of search and date filters; exports (CSV, NDJSON, .xlsx) and zip bundles.
    # One of each per worker, and a node runs at most WEB_CONCURRENCY of each.
    BULKHEAD_SEARCHES: int = Field(default=1, ge=0)
    BULKHEAD_EXPORTS: int = Field(default=1, ge=0)
    # Expensive requests of any kind at once per process (None = KARIBU_THREADS - 1, at least 1; 0 = no limit):
    # with both kinds running, a worker still keeps a thread for short requests.
    BULKHEAD_EXPENSIVE: int | None = Field(default=None, ge=0)
    # Expensive requests at once in all the web processes of a node (None = CPU cores; 0 = no node limit), so
    # they never hold every core; their lock files' directory ("" = no node limit; gunicorn's configuration
    # makes one per master).
    BULKHEAD_NODE_EXPENSIVE: int | None = Field(default=None, ge=0)
    BULKHEAD_NODE_DIR: str = ""
    # Seconds an expensive request may wait for a place before its 503, and the Retry-After of that 503. No
    # wait by default: a waiting request holds a thread its worker's short requests need (docs/performance.md).
    BULKHEAD_QUEUE_SECONDS: float = Field(default=0.0, ge=0)
    BULKHEAD_RETRY_AFTER_SECONDS: int = Field(default=2, ge=1)
    # PostgreSQL statement_timeout (milliseconds; 0 = none) of the statements of a text search page and of an
    # exact count (search and date filters); SQLite interrupts them through a progress handler. A search cut
    # by it is a 503 saying "narrow it"; the portal's count then says it is unavailable.
    SEARCH_STATEMENT_TIMEOUT_MS: int = Field(default=3000, ge=0)
    COUNT_STATEMENT_TIMEOUT_MS: int = Field(default=3000, ge=0)

    @field_validator("SECRET_KEY_FALLBACKS", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """A comma-separated string (the environment's form) as its list of keys, empty items dropped."""
        items = value.split(",") if isinstance(value, str) else value
        if isinstance(items, (list, tuple)):
            return [item.strip() for item in items if not isinstance(item, str) or item.strip()]
        return value

    @classmethod
    def from_environment(cls, overrides: Mapping[str, Any] | None = None) -> Settings:
        """Settings from `overrides` over the environment over `./.env` (names case-insensitive), converted by the
        fields' types; a bad value is a `ConfigurationError` naming the setting, not its value."""
        by_upper_name = {name.upper(): name for name in cls.model_fields}
        values = {}
        for source in (dotenv_values(".env", encoding="utf-8"), os.environ, overrides or {}):
            for name, value in source.items():
                field = by_upper_name.get(name.upper())
                if field is not None and value is not None:
                    values[field] = value
        try:
            return cls(**values)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}"
                                 for problem in error.errors())
            raise ConfigurationError(f"{problems}. Correct it in the environment or .env.") from None

    def flask_config(self) -> dict:
        config = self.model_dump()
        config["SQLALCHEMY_DATABASE_URI"] = normalise_database_url(self.DATABASE_URL)
        config["MAX_CONTENT_LENGTH"] = self.API_MAX_BODY_BYTES
        config["RATELIMIT_STORAGE_URI"] = self.rate_limit_storage_uri()
        config["RATELIMIT_STORAGE_OPTIONS"] = self.redis_options()
        config["RATELIMIT_IN_MEMORY_FALLBACK_ENABLED"] = True
        config["RATELIMIT_SWALLOW_ERRORS"] = True
        return config


    def rate_limit_storage_uri(self) -> str:
        return self.RATELIMIT_STORAGE_URI or self.REDIS_URL

    def redis_options(self) -> dict:
        """Keyword arguments of every Redis client: one immediate retry on a connection error, none on a timeout,
        so nothing hangs when Redis is down or frozen."""
        return {"socket_timeout": self.REDIS_SOCKET_TIMEOUT, "socket_connect_timeout": self.REDIS_CONNECT_TIMEOUT,
                "retry": Retry(NoBackoff(), retries=1, supported_errors=(RedisConnectionError,))}


class ConfigurationError(RuntimeError):
    """A setting that makes it unsafe to start; the message names the setting and the fix."""


def check_startup_settings(config: Settings) -> None:
    """Refuse combinations that would silently weaken a check (run once, when the app is created)."""
    if config.OIDC_JWKS_URL:
        missing = [name for name in ("OIDC_ISSUER", "OIDC_AUDIENCE") if not getattr(config, name).strip()]
        if missing:
            raise ConfigurationError(
                f"OIDC is enabled (OIDC_JWKS_URL is set) but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} empty: tokens of any issuer or audience signed by "
                "that key set would be accepted. Set OIDC_ISSUER and OIDC_AUDIENCE, or unset OIDC_JWKS_URL.")
    # Imported here: core.webhooks and core.messages read their settings from this module.
    from core.webhooks.urls import dev_receiver_origin
    if config.WEBHOOK_DEV_RECEIVER_URL and dev_receiver_origin(config.WEBHOOK_DEV_RECEIVER_URL) is None:
        raise ConfigurationError(
            "WEBHOOK_DEV_RECEIVER_URL must be an http URL on a loopback address (e.g. http://127.0.0.1:8766), "
            "without a query or user name; or leave it empty.")
    from core.messages.signing import dkim_signer
    dkim_signer(config)  # a half-configured DKIM or an unusable key file stops the start
    from core.institutions.sender_domains import resolver_address
    resolver_address(config.DNS_RESOLVER)  # a malformed DNS_RESOLVER stops the start


class SettingsConfig(Config):
    """The Flask config of a Karibu app (`Flask.config_class`), holding its `Settings` in `settings`; a write of a
    setting's name goes to the `Settings` too, validated (derived Flask keys are not recomputed)."""

    def __init__(self, root_path, defaults=None):
        super().__init__(root_path, defaults)
        self.settings = Settings()

    def use(self, settings: Settings) -> None:
        self.settings = settings
        super().update(settings.flask_config())

    def __setitem__(self, key, value) -> None:
        if key in Settings.model_fields:
            setattr(self.settings, key, value)
            value = getattr(self.settings, key)  # as validated and converted
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        if key in Settings.model_fields:
            raise KeyError(f"{key} is a setting: it can be changed, not removed")
        super().__delitem__(key)

    def update(self, *args, **kwargs) -> None:  # dict.update would bypass __setitem__
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]


def settings() -> Settings:
    """The running app's typed settings (the instance `create_app` built, with later config writes applied): the
    one way every package reads configuration."""
    config = current_app.config
    if not isinstance(config, SettingsConfig):
        raise RuntimeError("settings() needs an app whose config_class is core.config.SettingsConfig "
                           "(wsgi.create_app makes one)")
    return config.settings


def normalise_database_url(url: str) -> str:
    """Accept the usual `postgres://` / `postgresql://` forms and route them through psycopg 3."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url
