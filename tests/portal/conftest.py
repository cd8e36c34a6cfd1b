"""Portal fixtures: signed-in test clients, an HTML reader and the CSRF token of a page."""
from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from portal.limiter import limiter

PASSWORD = "correct-horse-1"
_CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def csrf_token(client, path: str = "/login") -> str:
    page = client.get(path)
    match = _CSRF_META.search(page.get_data(as_text=True))
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def sign_in(client, email: str, password: str = PASSWORD):
    token = csrf_token(client)
    return client.post("/login", data={"email": email, "password": password, "csrf_token": token})


@dataclass
class Portal:
    """A signed-in browser-like client of one user of one institution."""
    client: object
    user: object
    institution: object
    token: str

    def get(self, path, htmx: bool = False, **kwargs):
        headers = kwargs.pop("headers", {})
        if htmx:
            headers["HX-Request"] = "true"
        return self.client.get(path, headers=headers, **kwargs)

    def post(self, path, data=None, htmx: bool = False, csrf: bool = True, **kwargs):
        headers = kwargs.pop("headers", {})
        if htmx:
            headers["HX-Request"] = "true"
            if csrf:
                headers["X-CSRFToken"] = self.token
        data = dict(data or {})
        if csrf and not htmx:
            data["csrf_token"] = self.token
        return self.client.post(path, data=data, headers=headers, **kwargs)


@pytest.fixture(autouse=True)
def _fresh_login_counters(app):
    """Sign-in throttling counts in Redis; each test starts with clean counters."""
    with app.app_context():
        limiter.reset()
    yield


@pytest.fixture
def portal_as(app, factory):
    def make(role: str = "staff", institution=None) -> Portal:
        institution = institution or factory.institution()
        user = factory.user(institution, role=role)
        client = app.test_client()
        response = sign_in(client, user.email)
        assert response.status_code == 302, response.get_data(as_text=True)
        return Portal(client=client, user=user, institution=institution, token=csrf_token(client, "/dashboard"))
    return make


@pytest.fixture
def staff(portal_as) -> Portal:
    return portal_as("staff")


@pytest.fixture
def admin(portal_as) -> Portal:
    return portal_as("admin")
