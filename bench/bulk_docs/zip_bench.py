"""Zip bundle benchmark: streaming throughput and server memory.

Builds a throwaway SQLite database and document directory, gives each of the
first applications one large document of unique content, starts gunicorn (one
sync worker) and downloads zip pages over loopback with curl.

Throughput, for the 1 GB page (100 applications, 10 x 1 MB + 90 x 11 MB), page
cache warm, runs interleaved so that load from other work hits each alike:

* reading the same files from disk (1 MB reads, in this process);
* building the zip in this process (``DocumentBundle``: the server's own work);
* ``GET /api/v1/applications/zip`` over HTTP;
* the same files sent raw by the same HTTP server (``raw_files.py``): what the
  HTTP stack alone costs.

Memory: the zip worker's peak RSS (``VmHWM``) after a 10 MB page, then after the
1 GB pages.

Usage: python bench/bulk_docs/zip_bench.py [--runs 5] [--big-mb 11]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.harness import flask_cli, flask_json, gunicorn, memory_kib, server_env  # noqa: E402

HERE = Path(__file__).resolve().parent
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/4")
READ_CHUNK = 1024 * 1024
SMALL_PAGE = 10     # applications with a 1 MB document: a 10 MB page
BIG_PAGE = 100      # 10 x 1 MB + 90 x --big-mb (11) MB: a 1 GB page by default


def sync_server(env: dict[str, str], application: str = "wsgi:create_app()", **options):
    """gunicorn with one sync worker, so the worker's memory is the server's memory."""
    return gunicorn(application, env=env, workers=1, worker_class="sync", timeout=600, **options)


def attach_documents(env: dict, institution_id: str, storage_dir: Path, big_mb: int) -> list[Path]:
    """Replace the documents of the first pages with one generated document each; their paths."""
    os.environ.update(env)
    from sqlalchemy import delete
    from werkzeug.datastructures import MultiDict

    from core.applications.documents import DocumentStorage
    from core.db import db
    from core.applications.listing.pages import fetch_application_page
    from core.applications.listing.query import parse_application_query
    from core.models.documents import Document
    from core.scoping import InstitutionScope
    from wsgi import create_app

    app = create_app()
    paths = []
    with app.app_context():
        scope = InstitutionScope(institution_id)
        db.session.execute(delete(Document))
        storage = DocumentStorage(str(storage_dir))
        block = os.urandom(READ_CHUNK)
        small = fetch_application_page(scope, parse_application_query(
            MultiDict({"limit": str(SMALL_PAGE)}), default_limit=10, max_limit=100))
        big = fetch_application_page(scope, parse_application_query(
            MultiDict({"limit": str(BIG_PAGE)}), default_limit=10, max_limit=100))
        sizes = {row.id: 1 for row in big.rows}
        sizes.update({row.id: big_mb for row in big.rows[SMALL_PAGE:]})
        for index, (application_id, megabytes) in enumerate(sizes.items()):
            path = storage_dir / "incoming.bin"
            digest = hashlib.sha256()
            with open(path, "wb") as out:
                for part in range(megabytes):
                    chunk = index.to_bytes(4, "big") + part.to_bytes(4, "big") + block[8:]
                    digest.update(chunk)
                    out.write(chunk)
            sha256 = digest.hexdigest()
            final = Path(storage.path(sha256))
            final.parent.mkdir(parents=True, exist_ok=True)
            path.rename(final)
            paths.append(final)
            db.session.add(Document(
                institution_id=institution_id, application_id=application_id, kind="supporting", filename=f"scan-{index}.pdf",
                content_type="application/pdf", size=megabytes * READ_CHUNK, sha256=sha256))
        db.session.commit()
        assert len(small.rows) == SMALL_PAGE and len(big.rows) == BIG_PAGE
    return paths


def zip_in_process(storage_dir: Path, paths: list[Path]) -> tuple[int, float]:
    """The server's own work for the big page (plan + zip), without HTTP."""
    from core.applications.document_bundles import BundleApplication, BundleDocument, DocumentBundle
    from core.applications.documents import DocumentStorage
    from core.models.base import utcnow

    applications = [
        BundleApplication(f"app_{index}", (BundleDocument(
            f"doc_{index}", "supporting", f"scan-{index}.pdf", "application/pdf", path.stat().st_size,
            path.name),))
        for index, path in enumerate(paths)]
    started = time.perf_counter()
    total = 0
    bundle = DocumentBundle(applications, DocumentStorage(str(storage_dir)), generated_at=utcnow())
    for chunk in bundle:
        total += len(chunk)
    return total, time.perf_counter() - started


def read_from_disk(paths: list[Path]) -> tuple[int, float]:
    started = time.perf_counter()
    total = 0
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(READ_CHUNK):
                total += len(chunk)
    return total, time.perf_counter() - started


def download(url: str, key: str = "", limit: int = 0) -> tuple[int, float]:
    """Fetch one zip page (or any URL) with curl: a native client, so the figure is the server's."""
    target = f"{url}/api/v1/applications/zip?limit={limit}" if limit else url
    result = subprocess.run(
        ["curl", "--silent", "--show-error", "--fail", "--output", "/dev/null",
         "--write-out", "%{size_download} %{time_total}",
         "--header", f"Authorization: Bearer {key}", target],
        capture_output=True, text=True, check=True, timeout=600,
    )
    size, seconds = result.stdout.split()
    return int(size), float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-mb", type=int, default=11, help="size of each large document, MB")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="karibu-zip-bench-") as workdir:
        workdir = Path(workdir)
        storage_dir = workdir / "documents"
        storage_dir.mkdir()
        env = server_env(f"sqlite:///{workdir / 'bench.db'}", DOCUMENT_STORAGE_DIR=str(storage_dir),
                         REDIS_URL=REDIS_URL)
        flask_cli("db", "upgrade", env=env)
        seeded = flask_json("seed-demo", "--applications", str(BIG_PAGE), env=env)
        paths = attach_documents(env, seeded["institution_id"], storage_dir, args.big_mb)
        big_paths = paths  # the 1 GB page holds every generated file
        small_paths = paths[:SMALL_PAGE]

        file_list = workdir / "files.txt"
        file_list.write_text("\n".join(str(p) for p in big_paths))
        raw_env = {**env, "BENCH_FILE_LIST": str(file_list)}
        with sync_server(env, probe="/api/v1/openapi.json") as server, \
                sync_server(raw_env, "raw_files:app", source=HERE, probe="/") as raw_server:
            worker = server.worker_pids()[0]
            key = seeded["api_key"]
            download(server.url, key, 1)
            rss_idle = memory_kib(worker, "VmRSS")
            small_bytes, _ = download(server.url, key, SMALL_PAGE)
            peak_small = memory_kib(worker, "VmHWM")
            read_from_disk(big_paths)
            disk, in_process, zipped, raw = [], [], [], []
            for _ in range(args.runs):  # interleaved, so that load from other work hits each alike
                disk.append(read_from_disk(big_paths))
                in_process.append(zip_in_process(storage_dir, big_paths))
                zipped.append(download(server.url, key, BIG_PAGE))
                raw.append(download(raw_server.url + "/"))
            peak_big = memory_kib(worker, "VmHWM")

        disk_rate = statistics.median(b / s for b, s in disk) / 1e6
        zip_rate = statistics.median(b / s for b, s in zipped) / 1e6
        in_process_rate = statistics.median(b / s for b, s in in_process) / 1e6
        raw_rate = statistics.median(b / s for b, s in raw) / 1e6
        print(f"files on disk: {len(small_paths)} in the small page, {len(big_paths)} in the big page")
        print(f"small page zip: {small_bytes / 1e6:.1f} MB, big page zip: {zipped[0][0] / 1e6:.1f} MB")
        print(f"read from disk:   {disk_rate:8.1f} MB/s (median of {args.runs})")
        print(f"zip in-process:   {in_process_rate:8.1f} MB/s (median of {args.runs})")
        print(f"zip over HTTP:    {zip_rate:8.1f} MB/s (median of {args.runs}, gunicorn sync worker -> curl)")
        print(f"raw files over HTTP: {raw_rate:5.1f} MB/s (median of {args.runs}, same files, same server)")
        print(f"ratio in-process zip/disk:       {in_process_rate / disk_rate:5.2f} (target >= 0.70)")
        print(f"ratio HTTP zip/disk:             {zip_rate / disk_rate:5.2f}")
        print(f"ratio HTTP zip/raw files (HTTP): {zip_rate / raw_rate:5.2f} (target >= 0.70)")
        print(f"worker RSS idle after a first request: {rss_idle / 1024:7.1f} MiB")
        print(f"worker peak RSS after the 10 MB page:  {peak_small / 1024:7.1f} MiB")
        print(f"worker peak RSS after the 1 GB pages:  {peak_big / 1024:7.1f} MiB "
              f"(growth {(peak_big - peak_small) / 1024:+.1f} MiB)")


if __name__ == "__main__":
    main()
