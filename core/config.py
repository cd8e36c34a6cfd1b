"""Configuration from environment variables (and a `.env` file in development).

Every setting is documented in the README with its default. `Settings().flask_config()` gives the Flask
config mapping; tests pass overrides to `create_app` instead of touching the environment.
"""
from __future__ import annotations

import os
from pathlib import Path

from flask import current_app
from pydantic_settings import BaseSettings, SettingsConfigDict

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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    # Core: secrets, engines, the API edge and identity
    SECRET_KEY: str = "dev-insecure-secret-change-me"
    DATABASE_URL: str = f"sqlite:///{INSTANCE_DIR / 'karibu.db'}"
    REDIS_URL: str = "redis://localhost:6379/0"
    TRIAL_API_KEY: str = "sk_trial_demo"
    EDGE_SHARED_SECRET: str = ""
    API_RATE_LIMIT: str = "600/minute"
    API_MAX_BODY_BYTES: int = 1_048_576
    OIDC_ISSUER: str = ""
    OIDC_AUDIENCE: str = ""
    OIDC_JWKS_URL: str = ""
    OIDC_INSTITUTION_CLAIM: str = "institution_id"
    LOG_LEVEL: str = "INFO"
    PROXY_COUNT: int = 0
    # Documents and bulk updates
    DOCUMENT_STORAGE_DIR: str = str(INSTANCE_DIR / "documents")
    EMIT_APPLICATION_UPDATED: bool = False
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
    # PEM file used instead of the system trust store to verify receivers' certificates ("" = system store).
    WEBHOOK_CA_BUNDLE: str = ""
    # Staff portal
    # Failed staff sign-ins per client address and email, and per client address (Flask-Limiter syntax).
    PORTAL_LOGIN_RATE_LIMIT: str = "5/minute;20/hour"
    PORTAL_LOGIN_ADDRESS_RATE_LIMIT: str = "30/minute"
    # Trial verifications on the public /try page per client address.
    PORTAL_TRY_RATE_LIMIT: str = "30/minute"
    # Session cookie: set SESSION_COOKIE_SECURE=true behind TLS.
    SESSION_COOKIE_SECURE: bool = False
    SESSION_COOKIE_SAMESITE: str = "Lax"
    # Event sources: public pages and payment callbacks
    # Shared secret of the M-Pesa aggregator: HMAC-SHA256 of the raw callback body ("" = M-Pesa refused).
    MPESA_CALLBACK_SECRET: str = ""
    # Flutterwave dashboard "secret hash", echoed in the verif-hash header ("" = Flutterwave refused).
    FLUTTERWAVE_SECRET_HASH: str = ""
    # Per client address, for the public apply form and decision-response page (POSTs only).
    PUBLIC_FORM_RATE_LIMIT: str = "20/minute"
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
    # Events are kept this many days past the events feed's guarantee (EVENTS_FEED_GUARANTEE_DAYS).
    RETENTION_EVENTS_DAYS_PAST_FEED: int = 30
    EVENTS_FEED_GUARANTEE_DAYS: int = 30
    RETENTION_MESSAGES_DAYS: int = 400
    # Rows deleted per transaction (short transactions: API writes never wait long behind the purge).
    RETENTION_BATCH_SIZE: int = 5000

    def flask_config(self) -> dict:
        config = self.model_dump()
        config["SQLALCHEMY_DATABASE_URI"] = normalise_database_url(self.DATABASE_URL)
        config["MAX_CONTENT_LENGTH"] = self.API_MAX_BODY_BYTES
        config["RATELIMIT_STORAGE_URI"] = self.REDIS_URL
        return config


def settings() -> Settings:
    """The running app's typed settings: the one way `core` reads configuration.

    Built from the app's config (so `create_app` overrides and tests' changes are seen) without validating
    again: the values were validated when the app was created.
    """
    config = current_app.config
    return Settings.model_construct(**{name: config[name] for name in Settings.model_fields if name in config})


def normalise_database_url(url: str) -> str:
    """Accept the usual `postgres://` / `postgresql://` forms and route them through psycopg 3."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url
