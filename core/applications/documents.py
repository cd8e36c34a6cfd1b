"""Content-addressed document storage (a file's name is its SHA-256) and the safe names and types it is served under."""
from __future__ import annotations

import hashlib
import os
import posixpath
import re
import tempfile
import unicodedata
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

from core.config import settings

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_UNSAFE_FILENAME_CHARS = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")
# What may stand inside the quoted ASCII `filename="…"` of a Content-Disposition header.
_NOT_HEADER_SAFE = re.compile(r"[^A-Za-z0-9 ._()+,=@~!#$&'-]")

FALLBACK_CONTENT_TYPE = "application/octet-stream"
# Types a browser may be told a document has: documents and images that cannot run script. Anything else,
# text/html and image/svg+xml included, is served as application/octet-stream.
DOWNLOADABLE_CONTENT_TYPES = frozenset({
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/tiff",
    "image/heic",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.oasis.opendocument.text",
})


def safe_filename(filename: str, fallback: str) -> str:
    """A file name that cannot escape its folder or upset an unzip tool: no path, no control characters."""
    name = _UNSAFE_FILENAME_CHARS.sub("_", posixpath.basename(filename.replace("\\", "/")))
    name = name.strip(" .")
    return name or fallback


def served_content_type(stored: str | None) -> str:
    """The stored content type if it is on the allow-list (parameters dropped), else application/octet-stream."""
    media_type = (stored or "").split(";", 1)[0].strip().lower()
    return media_type if media_type in DOWNLOADABLE_CONTENT_TYPES else FALLBACK_CONTENT_TYPE


def attachment_disposition(filename: str, fallback: str) -> str:
    """`attachment; filename="ascii"; filename*=UTF-8''…` (RFC 6266): no path, no CR/LF, no quotes."""
    name = safe_filename(filename, fallback)
    folded = "".join(char for char in unicodedata.normalize("NFKD", name) if not unicodedata.combining(char))
    ascii_name = _NOT_HEADER_SAFE.sub("_", folded).strip(" .") or fallback
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


class DocumentStorage:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, sha256: str) -> Path:
        """Where content with this hash lives; anything but a lowercase hex SHA-256 is refused."""
        if not _SHA256_HEX.fullmatch(sha256):
            raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def put(self, data: bytes) -> str:
        """Store `data` (atomically: write to a temporary file, then rename) and return its SHA-256."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.is_file():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, target)
        return digest

    def size(self, sha256: str) -> int | None:
        """The stored size in bytes, or None when the content is not in storage."""
        try:
            return self.path(sha256).stat().st_size
        except FileNotFoundError:
            return None

    def open(self, sha256: str) -> BinaryIO:
        """Open stored content for reading (``FileNotFoundError`` when it is not there)."""
        return self.path(sha256).open("rb")


def document_storage() -> DocumentStorage:
    return DocumentStorage(settings().DOCUMENT_STORAGE_DIR)
