"""Streamed zip bundles of application documents: a ``manifest.json`` and one folder per application."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, Protocol

from core.applications.documents import safe_filename
from core.db import db
from core.models.documents import Document
from core.scoping import InstitutionScope

MANIFEST_NAME = "manifest.json"
READ_CHUNK_BYTES = 1024 * 1024

STATUS_INCLUDED = "included"
STATUS_MISSING = "missing"


def _stored_zip_stream():
    """A zipstream-ng archive of stored (uncompressed) entries, with ISA-L's CRC-32; loaded by the first bundle."""
    import zipstream.ng
    from isal import isal_zlib

    zipstream.ng.crc32 = isal_zlib.crc32
    return zipstream.ZipStream(compress_type=zipstream.ZIP_STORED, sized=True)


class DocumentSource(Protocol):
    """What a bundle needs from document storage."""

    def size(self, sha256: str) -> int | None:
        """The size of stored content in bytes, or None when it is not there."""

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


def _read_exactly(storage: DocumentSource, sha256: str, size: int) -> Iterator[bytes]:
    """Yield a stored file in chunks, opened when reached; raise if its size changed since the bundle was planned."""
    remaining = size
    with storage.open(sha256) as handle:
        while remaining and (chunk := handle.read(min(READ_CHUNK_BYTES, remaining))):
            remaining -= len(chunk)
            yield chunk
    if remaining:
        raise OSError(f"stored document {sha256} shrank while it was being sent")


class DocumentBundle:
    """A planned zip bundle whose exact length is known before the first byte is sent."""

    def __init__(
        self,
        applications: Iterable[BundleApplication],
        storage: DocumentSource,
        *,
        generated_at: datetime,
        page: dict | None = None,
    ):
        """``page`` (for instance ``{"has_next": True, "cursor": "..."}``) is copied into the manifest."""
        self._archive = _stored_zip_stream()
        self._archive.comment = b"Karibu application documents"
        manifest_applications = []
        pending = []
        document_count = missing_count = 0
        for application in applications:
            entries = []
            pending.append((f"{application.id}/", None, None))
            for document, path in zip(application.documents, archive_paths(application)):
                document_count += 1
                size = storage.size(document.sha256)
                if size is None:
                    missing_count += 1
                    path = None
                else:
                    pending.append((path, document.sha256, size))
                entries.append({
                    "id": document.id,
                    "kind": document.kind,
                    "filename": document.filename,
                    "path": path,
                    "content_type": document.content_type,
                    "size": document.size if size is None else size,
                    "sha256": document.sha256,
                    "status": STATUS_MISSING if size is None else STATUS_INCLUDED,
                })
            manifest_applications.append({"id": application.id, "documents": entries})
        self.manifest = {
            "generated_at": generated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "application_count": len(manifest_applications),
            "document_count": document_count,
            "missing_count": missing_count,
            **(page or {}),
            "applications": manifest_applications,
        }
        self._archive.add(json.dumps(self.manifest, indent=2).encode("utf-8"), MANIFEST_NAME)
        for path, sha256, size in pending:
            if sha256 is None:
                self._archive.mkdir(path)
            else:
                self._archive.add(_read_exactly(storage, sha256, size), path, size=size)

    @property
    def content_length(self) -> int:
        return len(self._archive)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._archive)


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
