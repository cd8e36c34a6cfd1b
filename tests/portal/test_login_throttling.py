"""Failed staff sign-ins are limited per account too, and the lockout does not reveal whether it exists."""
from __future__ import annotations

import re
import uuid

import pytest

from tests.portal.conftest import PASSWORD, csrf_token

LOCKOUT_NOTICE = "Too many failed sign-in attempts. Wait a few minutes, then try again."


@pytest.fixture
def account_limit(app, monkeypatch):
    monkeypatch.setitem(app.config, "PORTAL_LOGIN_RATE_LIMIT", "1000/minute")
    monkeypatch.setitem(app.config, "PORTAL_LOGIN_ADDRESS_RATE_LIMIT", "1000/minute")
    monkeypatch.setitem(app.config, "PORTAL_LOGIN_ACCOUNT_RATE_LIMIT", "3/minute")


def sign_in_from(app, address: str, email: str, password: str):
    """A fresh browser at `address` (its own session and CSRF token)."""
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    token = csrf_token(client)
    return client.post("/login", data={"email": email, "password": password, "csrf_token": token})


def _unique_address() -> str:
    value = uuid.uuid4().int
    return f"172.{16 + value % 16}.{value // 16 % 256}.{value // 4096 % 254 + 1}"


def guess_from_many_addresses(app, email: str, attempts: int):
    return [sign_in_from(app, _unique_address(), email, f"guess-{n}") for n in range(attempts)]


def test_one_account_cannot_be_guessed_from_many_addresses(app, factory, account_limit):
    user = factory.user(factory.institution())
    responses = guess_from_many_addresses(app, user.email, 4)
    assert [r.status_code for r in responses] == [401, 401, 401, 429]
    assert LOCKOUT_NOTICE in responses[-1].get_data(as_text=True)
    assert responses[-1].headers["Retry-After"]
    # The right password from yet another address waits too; another account is untouched.
    assert sign_in_from(app, _unique_address(), user.email.upper(), PASSWORD).status_code == 429
    other = factory.user(factory.institution())
    assert sign_in_from(app, _unique_address(), other.email, PASSWORD).status_code == 302


def _page_without_variables(response, email: str) -> str:
    text = response.get_data(as_text=True).replace(email, "EMAIL")
    return re.sub(r'(csrf-token" content=|name="csrf_token" type="hidden" value=|type="hidden" name="csrf_token" '
                  r'value=|nonce=)"[^"]*"', r'\1""', text)


def test_the_lockout_looks_the_same_for_known_and_unknown_emails(app, factory, account_limit):
    known = factory.user(factory.institution()).email
    unknown = f"nobody-{uuid.uuid4().hex[:8]}@example.ac.ke"
    known_lockout = guess_from_many_addresses(app, known, 4)[-1]
    unknown_lockout = guess_from_many_addresses(app, unknown, 4)[-1]
    assert known_lockout.status_code == unknown_lockout.status_code == 429
    assert known_lockout.headers["Retry-After"] == unknown_lockout.headers["Retry-After"]
    assert _page_without_variables(known_lockout, known) == _page_without_variables(unknown_lockout, unknown)
