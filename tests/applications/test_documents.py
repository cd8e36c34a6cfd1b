"""Content-addressed document storage."""
import hashlib

import pytest

from core.applications.documents import DocumentStorage


@pytest.fixture
def storage(tmp_path):
    return DocumentStorage(tmp_path / "documents")


def test_content_is_stored_under_its_hash_once(storage):
    content = b"%PDF-1.4 transcript"

    first = storage.put(content)
    second = storage.put(content)

    assert first == second == hashlib.sha256(content).hexdigest()
    assert storage.exists(first)
    assert storage.size(first) == len(content)
    with storage.open(first) as handle:
        assert handle.read() == content
    assert [p.name for p in storage.root.rglob("*") if p.is_file()] == [first]


def test_missing_content(storage):
    absent = hashlib.sha256(b"never stored").hexdigest()

    assert not storage.exists(absent)
    assert storage.size(absent) is None
    with pytest.raises(FileNotFoundError):
        storage.open(absent)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "ABC", "a" * 63, "A" * 64, "g" * 64])
def test_anything_but_a_sha256_is_refused(storage, bad):
    with pytest.raises(ValueError):
        storage.path(bad)
