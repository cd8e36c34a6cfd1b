"""Fixtures of the applications' tests: a tenant with its API key, a signed-in staff member of the same
institution, and the places of a bulkhead taken, as concurrent expensive requests would take them."""
from __future__ import annotations

import re
from contextlib import contextmanager
from html import unescape

import pytest

from core.applications import bulkheads
from core.models import AuditLog
from core.db import db
from tests.portal.conftest import portal_as  # noqa: F401 (fixture)
from tests.api.conftest import api_get, make_tenant, other_tenant, tenant  # noqa: F401 (fixtures)

APPLICATION_LINK = re.compile(r'href="/applicants/(app_[A-Za-z0-9]+)\?')
LOAD_MORE = re.compile(r'<tr class="load-more" id="load-more">\s*<td[^>]*>\s*<a [^>]*href="([^"]+)"')


@pytest.fixture
def staff_of(portal_as):  # noqa: F811
    """A signed-in staff member of the tenant's institution."""
    def make(tenant):  # noqa: F811
        return portal_as("staff", institution=tenant.institution)
    return make


@pytest.fixture
def no_queue(app, monkeypatch):
    """A full bulkhead refuses at once (no wait), so the tests do not sleep."""
    monkeypatch.setitem(app.config, "BULKHEAD_QUEUE_SECONDS", 0)


@pytest.fixture
def occupied(app):
    """`with occupied(kind):` takes every place of the bulkhead `kind` (as that many running requests would)."""
    @contextmanager
    def occupy(kind: str):
        with app.app_context():
            limit = {"search": app.config["BULKHEAD_SEARCHES"], "export": app.config["BULKHEAD_EXPORTS"]}[kind]
            permits = [bulkheads.acquire(kind) for _ in range(limit)]
        try:
            yield
        finally:
            for permit in permits:
                permit.release()
    return occupy


def audit_rows(app) -> list[tuple[str, str, int]]:
    """(source, action, status) of every audit row, oldest first."""
    with app.app_context():
        rows = db.session.execute(db.select(AuditLog.source, AuditLog.action, AuditLog.status).order_by(AuditLog.id))
        return [tuple(row) for row in rows]


def portal_ids(portal, path: str) -> list[str]:
    """The applications of every page of the portal list at `path` (following "Load more")."""
    ids: list[str] = []
    response = portal.get(path)
    while True:
        assert response.status_code == 200, response.get_data(as_text=True)[:500]
        html = response.get_data(as_text=True)
        ids.extend(dict.fromkeys(APPLICATION_LINK.findall(html)))
        more = LOAD_MORE.search(html)
        if more is None:
            return ids
        response = portal.get(unescape(more.group(1)), htmx=True)
