"""Every state-changing route outside the API and the callbacks refuses a request without a CSRF token.

The routes come from the app's URL map, so a new portal or public route is checked the day it is added.
"""
from __future__ import annotations

import pytest

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
    ("portal.webhooks.webhooks_rotate", "POST /webhooks/rotate"),
    ("portal.users.users_role", "POST /users/x/role"),
    ("portal.public.respond_to_decision", "POST /decisions/respond/x"),
])
def test_the_check_notices_a_route_exempted_from_csrf(app, admin, monkeypatch, view, route):
    monkeypatch.setattr(csrf, "_exempt_views", csrf._exempt_views | {view})
    unprotected = routes_accepting_a_missing_token(app, admin.client)
    assert {found for found, _, _ in unprotected} == {route}, unprotected


def test_an_exempted_form_still_checks_its_token(app, admin, factory, monkeypatch):
    """Defence in depth: every portal POST reads a Flask-WTF form, which checks the token itself."""
    monkeypatch.setattr(csrf, "_exempt_views", csrf._exempt_views | {"portal.users.users_role"})
    colleague = factory.user(admin.institution, role="staff")
    response = admin.post(f"/users/{colleague.id}/role", {"role": "admin"}, csrf=False)
    assert response.status_code == 400
    assert "security token is missing or expired" in response.get_data(as_text=True)
