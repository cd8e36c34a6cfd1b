"""Every state-changing route outside the API and the callbacks refuses a request without a CSRF token, and
every POST form the pages draw carries one.

The routes come from the app's URL map, so a new portal or public route is checked the day it is added.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.db import db
from core.models.messages import Message
from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver  # noqa: F401 (fixtures)
from wsgi import csrf

STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}
CSRF_REFUSAL = "Your form expired or came from another site"


def state_changing_routes(app) -> list[tuple[str, str]]:
    """(method, URL) of every state-changing route but the API's and the callbacks' (which take no cookies),
    each path parameter filled in: the token is checked before a view looks at its parameters."""
    adapter = app.url_map.bind("localhost")
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith(("/api/", "/callbacks/")):
            continue
        for method in sorted(rule.methods & STATE_CHANGING):
            routes.append((method, adapter.build(rule.endpoint, {name: "x" for name in rule.arguments},
                                                 method=method)))
    return routes


def routes_accepting_a_missing_token(app, client) -> list[tuple[str, str, int]]:
    """(route, kind of request, status) of every answer but the CSRF refusal, to a plain form post and to an
    htmx request, neither carrying a token."""
    unprotected = []
    for method, url in state_changing_routes(app):
        for kind, headers in (("form", {}), ("htmx", {"HX-Request": "true"})):
            response = client.open(url, method=method, data={"stage": "offer", "role": "admin"}, headers=headers)
            if response.status_code != 400 or CSRF_REFUSAL not in response.get_data(as_text=True):
                unprotected.append((f"{method} {url}", kind, response.status_code))
    return unprotected


def test_every_state_changing_portal_route_needs_a_csrf_token(app, admin):
    routes = state_changing_routes(app)
    assert len(routes) >= 19 and ("POST", "/decisions/respond/x") in routes and ("POST", "/logout") in routes
    assert routes_accepting_a_missing_token(app, admin.client) == []


@pytest.mark.parametrize("view, route", [
    ("portal.webhooks.views.webhooks_rotate", "POST /webhooks/rotate"),
    ("portal.accounts.users.users_role", "POST /users/x/role"),
    ("portal.public.views.respond_to_decision", "POST /decisions/respond/x"),
])
def test_the_check_notices_a_route_exempted_from_csrf(app, admin, monkeypatch, view, route):
    monkeypatch.setattr(csrf, "_exempt_views", csrf._exempt_views | {view})
    unprotected = routes_accepting_a_missing_token(app, admin.client)
    assert {found for found, _, _ in unprotected} == {route}, unprotected


def test_an_exempted_form_still_checks_its_token(app, admin, factory, monkeypatch):
    """Defence in depth: every portal POST reads a Flask-WTF form, which checks the token itself."""
    monkeypatch.setattr(csrf, "_exempt_views", csrf._exempt_views | {"portal.accounts.users.users_role"})
    colleague = factory.user(admin.institution, role="staff")
    response = admin.post(f"/users/{colleague.id}/role", {"role": "admin"}, csrf=False)
    assert response.status_code == 400
    assert "security token is missing or expired" in response.get_data(as_text=True)


# Every POST form a page draws carries the token, so a browser's plain form post (no htmx header) is accepted.
_FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S | re.I)
_POST = re.compile(r'\bmethod="post"', re.I)
_TOKEN_INPUT = re.compile(r'<input\b[^>]*\bname="csrf_token"[^>]*>')
_VALUE = re.compile(r'\bvalue="([^"]+)"')
_META_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def post_forms_without_the_token(html: str) -> list[str]:
    """The opening tag of every POST form of the page without a hidden token input holding the page's token
    (the layout's meta tag; any non-empty token on a page without one)."""
    meta = _META_TOKEN.search(html)
    missing = []
    for attributes, body in _FORM.findall(html):
        if not _POST.search(attributes):
            continue
        tokens = [match.group(1) for tag in _TOKEN_INPUT.findall(body) if (match := _VALUE.search(tag))]
        if not any(token == meta.group(1) if meta else token for token in tokens):
            missing.append(f"<form{attributes}>")
    return missing


@pytest.fixture
def every_form_on_show(app, admin, factory, delivering):  # noqa: F811
    """An institution in a state where its pages draw every kind of POST form: a colleague, an invitation,
    a key, a webhook endpoint with a delivery, a failed message, a decision to send, a saved view."""
    institution = admin.institution
    factory.user(institution, role="staff")
    application = factory.application(institution, decision="accepted")
    assert admin.post("/users", {"email": "new.colleague@example.org", "role": "staff"}).status_code < 400
    assert admin.post("/api-keys", {"name": "Registry sync"}).status_code < 400
    assert admin.post("/webhooks", {"url": delivering.url(RECEIVER_HOST), "events": ["decision.sent"]},
                      htmx=True).status_code == 200
    assert admin.post("/webhooks/ping", htmx=True).status_code == 200
    assert admin.post("/applicants/views", {"name": "Accepted"}, htmx=True).status_code == 200
    with app.app_context():
        message = Message(institution_id=institution.id, application_id=application.id, channel="email",
                          recipient="aimee@example.org", template="decision", language="en", subject="Decision",
                          body_text="…", status="failed", attempts=5, last_error="550 no such mailbox")
        db.session.add(message)
        db.session.commit()
        message_id = message.id
    return ["/dashboard", "/applicants", f"/applicants/{application.id}", f"/applicants/{application.id}/privacy",
            "/cycles", "/verification", "/audit", "/messages", f"/messages/{message_id}", "/webhooks",
            "/webhooks/deliveries", "/users", "/api-keys", "/account", "/account/two-factor/enrol", "/settings"]


def test_every_post_form_of_the_pages_carries_the_token(app, admin, every_form_on_show):
    forms = 0
    for path in every_form_on_show:
        for htmx in (False, True):
            response = admin.get(path, htmx=htmx)
            assert response.status_code == 200, path
            html = response.get_data(as_text=True)
            forms += sum(1 for attributes, _ in _FORM.findall(html) if _POST.search(attributes))
            assert post_forms_without_the_token(html) == [], (path, htmx)
    assert forms >= 60, "the pages drew their forms"
    signed_out = app.test_client()
    for path in ("/login", "/login/forgot", "/try"):
        response = signed_out.get(path)
        html = response.get_data(as_text=True)
        assert response.status_code == 200 and _POST.search(html), path
        assert post_forms_without_the_token(html) == [], path


@pytest.mark.parametrize("path, action", [
    ("/api-keys", "/api-keys/"),  # a key's revoke button (csrf_field)
    ("/account", "/account/password"),  # a form rendered from its Flask-WTF form object
    ("/dashboard", "/logout"),  # the layout's sign-out button
])
def test_the_check_notices_a_form_that_lost_its_token(admin, every_form_on_show, path, action):
    html = admin.get(path).get_data(as_text=True)
    start = html.index(f'action="{action}')
    end = html.index("</form>", start)
    form = html[start:end]
    stripped = html[:start] + _TOKEN_INPUT.sub("", form, count=1) + html[end:]
    assert stripped != html
    [missing] = post_forms_without_the_token(stripped)
    assert f'action="{action}' in missing
    assert post_forms_without_the_token(html.replace(_META_TOKEN.search(html).group(1), "forged", 1)) != []


def test_templates_write_the_token_one_way():
    """A POST form in a template carries `{{ csrf_field() }}` (templates/_forms.html) or, when it is drawn
    from a Flask-WTF form object, `{{ form.csrf_token }}`; nothing writes the hidden input by hand."""
    root = Path(__file__).resolve().parents[2] / "templates"
    by_hand, without = [], []
    for template in sorted(root.rglob("*.html")):
        source = template.read_text(encoding="utf-8")
        name = str(template.relative_to(root))
        if 'name="csrf_token"' in source and name != "_forms.html":
            by_hand.append(name)
        for attributes, body in _FORM.findall(source):
            if _POST.search(attributes) and not re.search(r"\{\{ (csrf_field\(\)|\w+\.csrf_token) \}\}", body):
                without.append(f"{name}: <form{attributes[:80]}")
    assert by_hand == [] and without == []
