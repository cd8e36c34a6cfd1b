"""Content-addressed document storage: a file's name is its SHA-256, so identical files are stored once."""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import BinaryIO

from core.config import settings

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


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
