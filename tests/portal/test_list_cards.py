"""The list pages as cards on phones: every cell of a list table carries its column's name (`data-label`, shown
by static/portal.css below 768 px), the row's actions are marked to take the card's width, and the filters fold
behind a "Filters" button that counts the active ones (updated by each filtered answer)."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from sqlalchemy import select

from core.applications.history import Actor
from core.applications.state_updates import apply_updates, parse_updates
from core.db import db
from core.models import Message
from core.scoping import InstitutionScope
from core.webhooks.endpoints import save_endpoint
from core.webhooks.log import send_test_ping

LIST_PAGES = ["/applicants", "/messages", "/users", "/api-keys", "/audit", "/webhooks/deliveries"]


class _Tables(HTMLParser):
    """Each `.cards` table of a page: its column headers' visible text and, per body row, each cell's class and
    `data-label`."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self.cell: dict | None = None
        self.hidden_depth = 0
        self.in_cards = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "div" and "cards" in classes and "table-wrap" in classes:
            self.in_cards = True
        elif tag == "table" and self.in_cards:
            self.tables.append({"headers": [], "rows": []})
        elif tag == "tr" and self.tables and self.in_cards:
            self.tables[-1]["rows"].append([])
        elif tag in ("th", "td") and self.tables and self.in_cards:
            self.cell = {"tag": tag, "text": "", "label": attributes.get("data-label"), "class": classes,
                         "colspan": attributes.get("colspan")}
            self.tables[-1]["rows"][-1].append(self.cell)
        elif self.cell is not None and "visually-hidden" in classes or self.hidden_depth:
            self.hidden_depth += 1 if tag not in ("input", "br") else 0

    def handle_endtag(self, tag):
        if self.hidden_depth and tag in ("span", "div"):
            self.hidden_depth -= 1
        if tag in ("th", "td"):
            self.cell = None
        elif tag == "table":
            self.in_cards = False

    def handle_data(self, data):
        if self.cell is not None and not self.hidden_depth:
            self.cell["text"] += data


def card_tables(html: str) -> list[dict]:
    parser = _Tables()
    parser.feed(html)
    tables = []
    for table in parser.tables:
        head, *body = table["rows"]
        headers = [re.sub(r"[▲▼]", "", cell["text"]).strip() for cell in head]
        tables.append({"headers": headers, "rows": [row for row in body if not any(c["colspan"] for c in row)]})
    return tables


@pytest.fixture
def lists(app, admin, factory, monkeypatch):
    """An admin of an institution with an applicant whose decision was sent, an API key, a pending invitation,
    a webhook delivery and audit rows."""
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
    institution = admin.institution
    applications = [factory.application(institution, first_name=name) for name in ("Aimée", "Jean")]
    factory.api_key(institution, name="Admissions website")
    scope = InstitutionScope(institution.id)
    with app.app_context():
        apply_updates(scope, parse_updates({"updates": [{"id": applications[0].id, "decision": "accepted",
                                                          "send_decision": True}]}),
                      actor=Actor.staff(admin.user.email), emit_application_updated=False)
        assert db.session.scalars(select(Message).where(Message.institution_id == institution.id)).first()
        save_endpoint(scope, "https://127.0.0.1:9/karibu")
        send_test_ping(scope)
    assert admin.post("/users", {"email": "new.officer@kih.ac.rw", "role": "staff"}).status_code == 201
    factory.user(institution, role="staff", email="officer@kih.ac.rw")
    return admin


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_cell_of_a_list_names_its_column_and_actions_take_the_card_width(lists, language):
    lists.post("/account/language", {"language": language})
    for path in LIST_PAGES:
        response = lists.get(path)
        assert response.status_code == 200, path
        tables = card_tables(response.get_data(as_text=True))
        assert tables, f"{path}: no list table shown as cards"
        for table in tables:
            assert table["rows"], f"{path}: a list without rows"
            for row in table["rows"]:
                assert len(row) == len(table["headers"]), path
                for header, cell in zip(table["headers"], row):
                    if "select" in cell["class"]:
                        continue  # the row's check box: placed in the card's corner
                    if not header:  # the actions column (its header for screen readers only)
                        assert "row-actions" in cell["class"] and cell["label"] is None, (path, cell)
                    else:
                        assert cell["label"] == header, (path, header, cell["label"])


def test_the_filters_button_counts_the_active_filters_and_each_answer_updates_it(lists):
    page = lists.get("/applicants").get_data(as_text=True)
    assert re.search(r'<details class="filter-fold" open data-fold-on-phones>\s*<summary[^>]*>Filters '
                     r'<span id="filter-count" class="badge badge-info" hidden>0 active</span></summary>', page)

    page = lists.get("/applicants?stage=submitted&paid=false&q=Aim").get_data(as_text=True)
    assert '<span id="filter-count" class="badge badge-info">3 active</span></summary>' in page

    answer = lists.get("/applicants?stage=submitted&paid=false", htmx=True).get_data(as_text=True)
    assert '<span id="filter-count" class="badge badge-info" hx-swap-oob="true">2 active</span>' in answer

    lists.post("/account/language", {"language": "fr"})
    page = lists.get("/audit?source=portal").get_data(as_text=True)
    assert re.search(r"<summary[^>]*>Filtres <span id=\"filter-count\" class=\"badge badge-info\">1 actif</span>", page)
    answer = lists.get("/audit?source=portal&outcome=ok", htmx=True).get_data(as_text=True)
    assert '<span id="filter-count" class="badge badge-info" hx-swap-oob="true">2 actifs</span>' in answer
