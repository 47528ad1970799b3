"""The blob store of the local Hub's repos: each file's bytes once, under
``hub.local/repos/blobs/<sha256[:2]>/<sha256>``, whatever repo or revision names them (read-only
files; a repo's checkout links to them). A regular file's blob is written from the commit's body; an
LFS file's from the legacy LFS upload, or from the Xet CAS, where a commit names a file uploaded
through Xet by its SHA-256: copied straight from the xorbs when hf_xet stored its chunks uncompressed
(the xorbs that held only that file then become maps onto the blob: the bytes are kept once), else
rebuilt through hf_xet, and checked against the digest either way.

An LFS file's blob is flushed to disk (file and folder) before the commit that names it is written:
a big file's bytes, written late by the kernel, would otherwise be lost to a crash the commit row
survives. A regular file's blob (at most 10 MB, often thousands in a commit) is left to the kernel.

Blocking (disk, hf_xet): call from a worker thread, not the event loop.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from console.server.hub.xetcas import CasStore
from console.server.hub.xorbs import fsync_dir
from console.server.jobs.wire import ApiError

log = logging.getLogger(__name__)
Reconstruct = Callable[[str, int, Path], None]
"""Rebuilds a CAS file (Xet hash, size) into a path."""


class BlobStore:
    """The blob methods of :class:`console.server.hub.repos.RepoStore` (which sets `blobs` and `cas`)."""

    blobs: Path
    cas: CasStore

    def blob_path(self, sha256: str) -> Path:
        return self.blobs / sha256[:2] / sha256

    def _put_blob(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self.blob_path(sha)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{sha}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_bytes(data)
            tmp.chmod(0o444)
            os.replace(tmp, path)
        return sha

    def has_blob(self, sha256: str) -> bool:
        return self.blob_path(sha256).exists()

    def put_lfs_blob(self, sha256: str, size: int, source: Path) -> None:
        """Keep an uploaded file (the legacy LFS upload) as the blob `sha256`, once its bytes match."""
        with source.open("rb") as fh:
            digest = hashlib.file_digest(fh, "sha256")
            got = fh.tell()  # the bytes read, to the end
        if got != size or digest.hexdigest() != sha256:
            raise ApiError(400, f"oid: the uploaded {got} bytes do not have SHA-256 {sha256} and size {size}")
        path = self.blob_path(sha256)
        path.parent.mkdir(parents=True, exist_ok=True)
        source.chmod(0o444)
        _keep(source, path)

    def _fetch_lfs_blob(self, sha256: str, size: int, reconstruct: Reconstruct) -> None:
        """Make sure the blob of an LFS file is here, rebuilding it from the Xet CAS."""
        path = self.blob_path(sha256)
        if path.exists():
            return
        xet_hash = self.cas.file_for_sha256(sha256)
        if xet_hash is None or self.cas.file_size(xet_hash) is None:
            raise ApiError(422, f"lfsFile: {sha256} was never uploaded to this server (upload it through Xet first)")
        if self.cas.file_size(xet_hash) != size:
            raise ApiError(422, f"lfsFile: {sha256} was uploaded with {self.cas.file_size(xet_hash)} bytes, "
                           f"the commit says {size}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{sha256}.{os.getpid()}.{threading.get_ident()}")
        try:
            digest = hashlib.sha256()
            with tmp.open("wb") as out:
                plain = self.cas.write_plain(xet_hash, out, digest)
            if not plain:
                reconstruct(xet_hash, size, tmp)
                with tmp.open("rb") as fh:
                    digest = hashlib.file_digest(fh, "sha256")
            if digest.hexdigest() != sha256:
                raise ApiError(422, f"lfsFile: the uploaded file does not have SHA-256 {sha256}")
            tmp.chmod(0o444)
            _keep(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        if plain:  # the blob holds the bytes of the xorbs that held only this file: kept once
            try:
                self.cas.lodge(xet_hash, path)
            except (OSError, ValueError) as exc:  # a full disk: the xorbs stay as they are
                log.warning("the xorbs of %s stay beside its blob: %s", sha256, exc)


def _keep(tmp: Path, path: Path) -> None:
    """Put a big file's blob in place, flushed to disk first (file and folder): a commit that names
    it never outlives its bytes in a crash."""
    with tmp.open("rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
