"""Streamed zip bundles of application documents.

A bundle holds one folder per application with its documents and, last, a
``manifest.json`` describing what was packed. The manifest is written after
every document has gone through the stream, so it reports what really
happened: a file that is missing from storage (or cannot be read) is listed
with ``"status": "missing"`` instead of breaking the download.

Memory stays constant whatever the page weighs: files are read in fixed-size
chunks, one file handle at a time, and nothing is buffered beyond a chunk.
Documents are stored, not deflated: they are mostly PDFs and images, which are
compressed already, so deflating would cost CPU for almost no gain.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, Protocol

from zipstream import ZIP_STORED, ZipStream

from core.extensions import db
from core.models.documents import Document
from core.scoping import InstitutionScope

MANIFEST_NAME = "manifest.json"
READ_CHUNK_BYTES = 256 * 1024

STATUS_INCLUDED = "included"
STATUS_MISSING = "missing"

_UNSAFE_FILENAME_CHARS = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")


class DocumentSource(Protocol):
    """What a bundle needs from document storage."""

    def open(self, sha256: str) -> BinaryIO:
        """Open stored content for reading; raise ``OSError`` when it is not there."""


@dataclass(frozen=True)
class BundleDocument:
    """The metadata of one stored document, detached from any database session."""

    id: str
    kind: str
    filename: str
    content_type: str
    size: int
    sha256: str


@dataclass(frozen=True)
class BundleApplication:
    id: str
    documents: tuple[BundleDocument, ...]


def safe_filename(filename: str, fallback: str) -> str:
    """A file name that cannot escape its folder or upset an unzip tool."""
    name = _UNSAFE_FILENAME_CHARS.sub("_", posixpath.basename(filename.replace("\\", "/")))
    name = name.strip(" .")
    return name or fallback


def _unique_name(name: str, document_id: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        return f"{name}-{document_id}"
    return f"{stem}-{document_id}.{extension}"


def archive_paths(application: BundleApplication) -> list[str]:
    """The path inside the zip of each document, in order, unique within the folder."""
    taken: set[str] = {MANIFEST_NAME}
    paths = []
    for document in application.documents:
        name = _unique_name(safe_filename(document.filename, document.id), document.id, taken)
        taken.add(name)
        paths.append(f"{application.id}/{name}")
    return paths


def _read_chunks(handle: BinaryIO, counter: list[int]) -> Iterator[bytes]:
    """Yield the file in chunks, closing it at the end; ``counter[0]`` counts bytes."""
    with handle:
        while chunk := handle.read(READ_CHUNK_BYTES):
            counter[0] += len(chunk)
            yield chunk


def stream_bundle(
    applications: Iterable[BundleApplication],
    storage: DocumentSource,
    *,
    generated_at: datetime,
    page: dict | None = None,
) -> Iterator[bytes]:
    """Yield the bytes of a zip bundle of ``applications``.

    ``page`` (for instance ``{"has_next": True, "cursor": "..."}``) is copied into
    the manifest so that a saved bundle still says where the next page starts.
    """
    archive = ZipStream(compress_type=ZIP_STORED)
    archive.comment = "Karibu application documents"
    manifest_applications = []
    document_count = 0
    missing_count = 0

    for application in applications:
        entries = []
        archive.mkdir(f"{application.id}/")
        for document, path in zip(application.documents, archive_paths(application)):
            document_count += 1
            entry = {
                "id": document.id,
                "kind": document.kind,
                "filename": document.filename,
                "path": path,
                "content_type": document.content_type,
                "size": document.size,
                "sha256": document.sha256,
                "status": STATUS_INCLUDED,
            }
            entries.append(entry)
            try:
                handle = storage.open(document.sha256)
            except OSError:
                missing_count += 1
                entry.update(path=None, status=STATUS_MISSING)
                continue
            streamed = [0]
            archive.add(_read_chunks(handle, streamed), path)
            yield from archive.all_files()
            entry["size"] = streamed[0]
        yield from archive.all_files()
        manifest_applications.append({"id": application.id, "documents": entries})

    manifest = {
        "generated_at": generated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "application_count": len(manifest_applications),
        "document_count": document_count,
        "missing_count": missing_count,
        **(page or {}),
        "applications": manifest_applications,
    }
    archive.add(json.dumps(manifest, indent=2).encode("utf-8"), MANIFEST_NAME)
    yield from archive.finalize()


def page_applications(scope: InstitutionScope, application_ids: Sequence[str]) -> list[BundleApplication]:
    """Document metadata of a page of applications, in page order, detached from the session."""
    documents: dict[str, list[BundleDocument]] = {application_id: [] for application_id in application_ids}
    rows = db.session.scalars(
        scope.select(Document)
        .where(Document.application_id.in_(application_ids))
        .order_by(Document.application_id, Document.created_at, Document.id)
    )
    for row in rows:
        documents[row.application_id].append(BundleDocument(
            id=row.id, kind=row.kind, filename=row.filename, content_type=row.content_type,
            size=row.size, sha256=row.sha256))
    return [BundleApplication(application_id, tuple(documents[application_id]))
            for application_id in application_ids]
