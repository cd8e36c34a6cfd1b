"""Fixtures of the university sign-in tests: a trustme CA that the app trusts through SSO_CA_BUNDLE, real
OpenID Connect providers (tests/accounts/oidc_provider.py) started per test module, institutions configured to use
them, and the browser-less walk of a sign-in (Karibu → provider → Karibu's callback)."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
import requests
import trustme
from sqlalchemy import select

from core.accounts import sso
from core.db import db
from core.models import AuditLog
from core.scoping import InstitutionScope
from tests.accounts.oidc_provider import TestProvider

DEFAULT_REDIRECT_URI = "http://127.0.0.1:8000/login/sso/callback"  # PUBLIC_BASE_URL's default + the callback


@dataclass
class Trust:
    ca: trustme.CA
    bundle: str


@pytest.fixture(scope="module")
def sso_trust(app, tmp_path_factory):
    """A CA of the tests' own, trusted by the app (SSO_CA_BUNDLE) for the module."""
    ca = trustme.CA()
    bundle = tmp_path_factory.mktemp("sso-ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    app.config["SSO_CA_BUNDLE"] = str(bundle)
    yield Trust(ca=ca, bundle=str(bundle))
    app.config["SSO_CA_BUNDLE"] = ""


def start_provider(trust: Trust, client_id: str, secret: str, algorithm: str = "RS256") -> TestProvider:
    provider = TestProvider(trust.ca.issue_cert("127.0.0.1", "localhost"), client_id, secret, algorithm).start()
    provider.allow_redirect_uri(DEFAULT_REDIRECT_URI)
    return provider


@pytest.fixture(scope="module")
def provider(sso_trust):
    started = start_provider(sso_trust, "karibu-client", "client-secret-of-karibu-1")
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def _provider_as_configured(request):
    """Each test starts with a provider that issues good tokens."""
    if "provider" in request.fixturenames:
        request.getfixturevalue("provider").reset()
    yield


def university(app, factory, provider: TestProvider, domains: str, *, require: bool = False,
               create_users: str = "none", name: str | None = None):
    """A new institution whose staff on `domains` sign in through `provider`."""
    institution = factory.institution(name)
    with app.app_context():
        sso.configure(InstitutionScope(institution.id), issuer=provider.issuer, client_id=provider.client.client_id,
                      client_secret=provider.client.client_secret, domains=domains, require=require,
                      create_users=create_users)
    return institution


@dataclass
class Walk:
    """A sign-in walked without a browser: Karibu's start, the provider's answer and Karibu's callback."""
    start: object
    callback_url: str
    response: object


def walk_sign_in(client, trust: Trust, email: str, next_url: str | None = None) -> Walk:
    query = {"email": email, **({"next": next_url} if next_url else {})}
    start = client.get("/login/sso", query_string=query)
    assert start.status_code == 302, start.get_data(as_text=True)
    answer = requests.get(start.headers["Location"], verify=trust.bundle, allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    callback = urlsplit(answer.headers["Location"])
    callback_url = f"{callback.path}?{callback.query}"
    return Walk(start=start, callback_url=callback_url, response=client.get(callback_url))


def sso_audit_rows(app, action: str = "auth.sso.refused") -> list[AuditLog]:
    with app.app_context():
        rows = list(db.session.scalars(select(AuditLog).where(AuditLog.action == action).order_by(AuditLog.id)))
        for row in rows:
            db.session.expunge(row)
        return rows
