"""Fixtures of the bulk update and document bundle tests."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from core.applications.documents import DocumentStorage
from core.db import db
from core.models import Application, Decision, Document, Event
from devtools.pdf import simple_pdf
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms


@dataclass
class School:
    institution: object
    raw_key: str
    stages: list[str]
    program: object
    cycle: object
    applications: list

    @property
    def headers(self) -> dict:
        return auth_header(self.raw_key)

    @property
    def ids(self) -> list[str]:
        return [a.id for a in self.applications]


def make_school(factory, applications: int = 3, name: str | None = None) -> School:
    institution = factory.institution(name)
    _, raw_key = factory.api_key(institution)
    program = factory.program(institution)
    cycle = factory.cycle(institution, programs=[program])
    rows = [factory.application(institution, program=program, cycle=cycle) for _ in range(applications)]
    rows.sort(key=lambda a: (a.submitted_at, a.id))
    return School(institution, raw_key, factory.stages(institution), program, cycle, rows)


@pytest.fixture
def school(factory) -> School:
    return make_school(factory)


@pytest.fixture
def other_school(factory) -> School:
    return make_school(factory, applications=1, name="Other University")


@pytest.fixture
def patch(client):
    """PATCH /applications/update, checked against the OpenAPI document."""
    def send(headers, body=None, *, data=None, content_type="application/json"):
        if body is not None:
            response = client.patch("/api/v1/applications/update", json=body, headers=headers)
        else:
            response = client.patch("/api/v1/applications/update", data=data, headers=headers,
                                    content_type=content_type)
        # The app consumed the body; rewind it so the OpenAPI check can read the request too.
        response.request.environ["wsgi.input"].seek(0)
        assert_conforms(response)
        return response
    return send


@pytest.fixture
def database_state(app):
    """Everything a bulk update may write, for before/after comparisons."""
    def snapshot() -> dict:
        with app.app_context():
            applications = db.session.execute(select(
                Application.id, Application.stage, Application.decision, Application.enrolled,
                Application.updated_at).order_by(Application.id)).all()
            decisions = db.session.execute(select(
                Decision.id, Decision.application_id, Decision.status, Decision.sent_at)
                .order_by(Decision.id)).all()
            events = db.session.execute(select(Event.id, Event.type).order_by(Event.id)).all()
            return {"applications": applications, "decisions": decisions, "events": events}
    return snapshot


@pytest.fixture
def attach(app):
    """Store real small PDFs for an application and record their metadata; returns the documents."""
    def attach_documents(application, *specs):
        storage = DocumentStorage(app.config["DOCUMENT_STORAGE_DIR"])
        with app.app_context():
            documents = []
            for kind, filename in specs:
                content = simple_pdf(f"{kind} of {application.id}", [filename, uuid.uuid4().hex])
                document = Document(
                    institution_id=application.institution_id, application_id=application.id, kind=kind,
                    filename=filename, content_type="application/pdf", size=len(content),
                    sha256=storage.put(content))
                db.session.add(document)
                documents.append(document)
            db.session.commit()
            for document in documents:
                db.session.refresh(document)
                db.session.expunge(document)
            return documents
    return attach_documents
