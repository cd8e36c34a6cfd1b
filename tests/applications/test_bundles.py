"""Unit tests of the zip bundle writer, without a database or a server."""

import hashlib
import io
import json
import zipfile
from datetime import datetime

import pytest

from core.applications.document_bundles import (
    MANIFEST_NAME,
    READ_CHUNK_BYTES,
    BundleApplication,
    BundleDocument,
    DocumentBundle,
    archive_paths,
    safe_filename,
)

GENERATED_AT = datetime(2026, 3, 1, 8, 30, 0)


class DirectoryStorage:
    """Content-addressed files in a directory, as the real storage lays them out."""

    def __init__(self, root):
        self.root = root
        self.opened = []

    def put(self, content: bytes) -> str:
        digest = hashlib.sha256(content).hexdigest()
        (self.root / digest).write_bytes(content)
        return digest

    def size(self, sha256):
        path = self.root / sha256
        return path.stat().st_size if path.exists() else None

    def open(self, sha256):
        self.opened.append(sha256)
        return open(self.root / sha256, "rb")


def document(storage, document_id, filename, content, kind="transcript"):
    digest = storage.put(content) if storage is not None else hashlib.sha256(content).hexdigest()
    return BundleDocument(
        id=document_id,
        kind=kind,
        filename=filename,
        content_type="application/pdf",
        size=len(content),
        sha256=digest,
    )


def unzip(bundle):
    content = b"".join(bundle)
    assert len(content) == bundle.content_length
    return zipfile.ZipFile(io.BytesIO(content))


@pytest.fixture
def storage(tmp_path):
    return DirectoryStorage(tmp_path)


def test_every_file_matches_the_manifest(storage):
    big = bytes(range(256)) * (3 * READ_CHUNK_BYTES // 256 + 7)
    applications = [
        BundleApplication("app_one", (
            document(storage, "doc_1", "transcript.pdf", b"%PDF-1.4 transcript one"),
            document(storage, "doc_2", "passport.pdf", big, kind="passport"),
        )),
        BundleApplication("app_two", (document(storage, "doc_3", "letter.pdf", b"%PDF-1.4 letter"),)),
    ]

    archive = unzip(DocumentBundle(applications, storage, generated_at=GENERATED_AT))

    assert archive.testzip() is None
    manifest = json.loads(archive.read(MANIFEST_NAME))
    assert manifest["generated_at"] == "2026-03-01T08:30:00Z"
    assert [a["id"] for a in manifest["applications"]] == ["app_one", "app_two"]
    assert manifest["document_count"] == 3
    assert manifest["missing_count"] == 0
    entries = [d for a in manifest["applications"] for d in a["documents"]]
    assert [e["path"] for e in entries] == [
        "app_one/transcript.pdf", "app_one/passport.pdf", "app_two/letter.pdf"]
    for entry in entries:
        content = archive.read(entry["path"])
        assert hashlib.sha256(content).hexdigest() == entry["sha256"]
        assert len(content) == entry["size"]
        assert entry["status"] == "included"
    assert archive.read("app_one/passport.pdf") == big
    assert set(archive.namelist()) == {
        "app_one/", "app_one/transcript.pdf", "app_one/passport.pdf",
        "app_two/", "app_two/letter.pdf", MANIFEST_NAME}


def test_missing_file_is_reported_and_the_rest_still_streams(storage):
    absent = document(None, "doc_gone", "transcript.pdf", b"never stored")
    present = document(storage, "doc_here", "passport.pdf", b"%PDF-1.4 passport")
    applications = [BundleApplication("app_one", (absent, present))]

    archive = unzip(DocumentBundle(applications, storage, generated_at=GENERATED_AT))

    manifest = json.loads(archive.read(MANIFEST_NAME))
    gone, here = manifest["applications"][0]["documents"]
    assert gone["status"] == "missing"
    assert gone["path"] is None
    assert gone["sha256"] == absent.sha256
    assert gone["filename"] == "transcript.pdf"
    assert here["status"] == "included"
    assert manifest["missing_count"] == 1
    assert "app_one/transcript.pdf" not in archive.namelist()
    assert archive.read("app_one/passport.pdf") == b"%PDF-1.4 passport"


def test_application_without_documents_gets_an_empty_folder(storage):
    archive = unzip(DocumentBundle(
        [BundleApplication("app_empty", ())], storage, generated_at=GENERATED_AT))

    assert "app_empty/" in archive.namelist()
    manifest = json.loads(archive.read(MANIFEST_NAME))
    assert manifest["applications"] == [{"id": "app_empty", "documents": []}]


def test_empty_page_is_a_valid_zip_with_only_the_manifest(storage):
    archive = unzip(DocumentBundle(
        [], storage, generated_at=GENERATED_AT, page={"has_next": False}))

    assert archive.namelist() == [MANIFEST_NAME]
    manifest = json.loads(archive.read(MANIFEST_NAME))
    assert manifest["has_next"] is False
    assert manifest["application_count"] == 0


def test_page_information_is_copied_into_the_manifest(storage):
    archive = unzip(DocumentBundle(
        [], storage, generated_at=GENERATED_AT, page={"has_next": True, "cursor": "abc"}))

    manifest = json.loads(archive.read(MANIFEST_NAME))
    assert (manifest["has_next"], manifest["cursor"]) == (True, "abc")


def test_files_are_opened_one_at_a_time_while_streaming(storage):
    applications = [BundleApplication(f"app_{i}", (
        document(storage, f"doc_{i}", f"file{i}.pdf", f"content {i}".encode()),)) for i in range(3)]

    stream = iter(DocumentBundle(applications, storage, generated_at=GENERATED_AT))
    assert storage.opened == []
    next(stream)
    while not storage.opened:
        next(stream)

    assert len(storage.opened) == 1
    b"".join(stream)
    assert len(storage.opened) == 3


def test_a_file_that_changes_after_planning_breaks_the_stream_instead_of_the_zip(storage):
    document_ = document(storage, "doc_1", "scan.pdf", b"x" * 5000)
    bundle = DocumentBundle([BundleApplication("app_one", (document_,))], storage, generated_at=GENERATED_AT)
    (storage.root / document_.sha256).write_bytes(b"x" * 10)

    with pytest.raises((OSError, RuntimeError)):
        b"".join(bundle)


def test_duplicate_and_hostile_file_names_stay_inside_their_folder(storage):
    same_a = document(storage, "doc_a", "scan.pdf", b"first scan")
    same_b = document(storage, "doc_b", "scan.pdf", b"second scan")
    hostile = document(storage, "doc_c", "../../etc/passwd", b"not really")
    manifest_clash = document(storage, "doc_d", "manifest.json", b"{}")
    nameless = document(storage, "doc_e", "..", b"no name")
    application = BundleApplication("app_x", (same_a, same_b, hostile, manifest_clash, nameless))

    assert archive_paths(application) == [
        "app_x/scan.pdf",
        "app_x/scan-doc_b.pdf",
        "app_x/passwd",
        "app_x/manifest-doc_d.json",
        "app_x/doc_e",
    ]
    archive = unzip(DocumentBundle([application], storage, generated_at=GENERATED_AT))
    assert archive.read("app_x/scan.pdf") == b"first scan"
    assert archive.read("app_x/scan-doc_b.pdf") == b"second scan"
    assert all(name.startswith("app_x/") or name == MANIFEST_NAME for name in archive.namelist())


@pytest.mark.parametrize(("filename", "expected"), [
    ("report.pdf", "report.pdf"),
    ("C:\\Users\\amina\\result slip.pdf", "result slip.pdf"),
    ("a<b>c|d?.pdf", "a_b_c_d_.pdf"),
    ("line\nbreak.pdf", "line_break.pdf"),
    ("  ", "fallback"),
])
def test_safe_filename(filename, expected):
    assert safe_filename(filename, "fallback") == expected
