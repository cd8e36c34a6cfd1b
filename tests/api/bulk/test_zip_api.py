"""GET /api/v1/applications/zip through the HTTP surface."""
from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from core.applications.documents import DocumentStorage
from tests.api.bulk.conftest import make_school
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms


@pytest.fixture
def download(client):
    def get(headers, **params):
        response = client.get("/api/v1/applications/zip", query_string=params, headers=headers)
        assert_conforms(response)
        return response
    return get


def open_zip(response) -> tuple[zipfile.ZipFile, dict]:
    archive = zipfile.ZipFile(io.BytesIO(response.data))
    assert archive.testzip() is None
    return archive, json.loads(archive.read("manifest.json"))


def test_a_folder_per_application_and_a_manifest_matching_every_file(download, attach, school):
    first, second, third = school.applications
    first_docs = attach(first, ("transcript", "transcript.pdf"), ("national_id", "national-id.pdf"))
    third_docs = attach(third, ("recommendation", "letter.pdf"))

    response = download(school.headers)

    assert response.status_code == 200
    assert response.mimetype == "application/zip"
    assert int(response.headers["Content-Length"]) == len(response.data)
    assert response.headers["X-Has-Next"] == "false"
    assert "X-Cursor" not in response.headers
    assert response.headers["Content-Disposition"].startswith('attachment; filename="applications-')
    archive, manifest = open_zip(response)
    assert [a["id"] for a in manifest["applications"]] == school.ids
    assert (manifest["application_count"], manifest["document_count"], manifest["missing_count"]) == (3, 3, 0)
    assert manifest["has_next"] is False and "cursor" not in manifest
    assert {name for name in archive.namelist() if name.endswith("/")} == {f"{i}/" for i in school.ids}
    listed = {d["id"]: d for a in manifest["applications"] for d in a["documents"]}
    for document in first_docs + third_docs:
        entry = listed[document.id]
        content = archive.read(entry["path"])
        assert hashlib.sha256(content).hexdigest() == entry["sha256"] == document.sha256
        assert len(content) == entry["size"] == document.size
        assert content.startswith(b"%PDF-")
        assert (entry["kind"], entry["filename"], entry["content_type"], entry["status"]) == (
            document.kind, document.filename, "application/pdf", "included")
    assert listed[first_docs[0].id]["path"] == f"{first.id}/transcript.pdf"
    assert manifest["applications"][1] == {"id": second.id, "documents": []}


def test_walking_the_pages_returns_every_application_once(download, attach, factory):
    school = make_school(factory, applications=12)
    for application in school.applications:
        attach(application, ("transcript", "transcript.pdf"))

    seen, pages, cursor = [], 0, None
    while True:
        params = {"limit": 5, **({"cursor": cursor} if cursor else {})}
        response = download(school.headers, **params)
        assert response.status_code == 200
        archive, manifest = open_zip(response)
        pages += 1
        page_ids = [a["id"] for a in manifest["applications"]]
        seen += page_ids
        assert {n.split("/")[0] for n in archive.namelist() if n != "manifest.json"} == set(page_ids)
        has_next = response.headers["X-Has-Next"] == "true"
        assert manifest["has_next"] is has_next
        if not has_next:
            assert "X-Cursor" not in response.headers and "cursor" not in manifest
            break
        cursor = response.headers["X-Cursor"]
        assert manifest["cursor"] == cursor

    assert pages == 3
    assert seen == school.ids


def test_cursor_is_bound_to_the_query(download, factory):
    school = make_school(factory, applications=3)
    cursor = download(school.headers, limit=2).headers["X-Cursor"]

    changed = download(school.headers, limit=1, cursor=cursor)
    tampered = download(school.headers, limit=2, cursor=cursor[:-3] + "xyz")

    assert changed.status_code == 400
    assert changed.get_json()["error"] == "cursor does not match this query"
    assert tampered.status_code == 400
    assert tampered.get_json()["error"] == "invalid cursor"


def test_limit_defaults_to_ten_and_stops_at_one_hundred(download, factory):
    school = make_school(factory, applications=11)

    default = download(school.headers)
    too_big = download(school.headers, limit=101)
    zero = download(school.headers, limit=0)

    _, manifest = open_zip(default)
    assert manifest["application_count"] == 10
    assert default.headers["X-Has-Next"] == "true"
    for response in (too_big, zero):
        assert response.status_code == 400
        message = "limit must be an integer between 1 and 100"
        assert response.get_json() == {
            "code": 400, "error": message, "errors": [{"location": "query", "name": "limit", "message": message}]}


def test_a_missing_file_is_reported_in_the_manifest(app, download, attach, school):
    first, second, _ = school.applications
    [lost, kept] = attach(first, ("transcript", "transcript.pdf"), ("national_id", "id.pdf"))
    [other] = attach(second, ("transcript", "transcript.pdf"))
    DocumentStorage(app.config["DOCUMENT_STORAGE_DIR"]).path(lost.sha256).unlink()

    response = download(school.headers)

    assert response.status_code == 200
    archive, manifest = open_zip(response)
    assert manifest["missing_count"] == 1
    entries = {d["id"]: d for a in manifest["applications"] for d in a["documents"]}
    assert entries[lost.id]["status"] == "missing"
    assert entries[lost.id]["path"] is None
    assert entries[lost.id]["sha256"] == lost.sha256
    assert f"{first.id}/transcript.pdf" not in archive.namelist()
    for document in (kept, other):
        content = archive.read(entries[document.id]["path"])
        assert hashlib.sha256(content).hexdigest() == document.sha256


def test_filters_apply_and_other_institutions_stay_out(client, download, attach, school, other_school):
    [theirs] = attach(other_school.applications[0], ("transcript", "theirs.pdf"))
    moved = school.ids[1]
    client.patch("/api/v1/applications/update", headers=school.headers,
                 json={"updates": [{"id": moved, "stage": school.stages[-1]}]})

    archive, own = open_zip(download(school.headers))
    _, by_stage = open_zip(download(school.headers, stage=school.stages[-1]))
    _, by_cycle = open_zip(download(school.headers, cycle=school.cycle.id))

    assert [a["id"] for a in own["applications"]] == school.ids
    assert not any(theirs.sha256 in json.dumps(own) or name.startswith(other_school.ids[0])
                   for name in archive.namelist())
    assert [a["id"] for a in by_stage["applications"]] == [moved]
    assert [a["id"] for a in by_cycle["applications"]] == school.ids


@pytest.mark.parametrize("headers", [{}, auth_header("sk_trial_demo")])
def test_requires_a_live_credential(download, school, headers):
    assert download(headers).status_code == 401
