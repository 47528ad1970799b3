"""The server as a Xet client of its own CAS (hf_xet, the same client `hf` uses).

Bucket files live twice: as Xet objects (what clients upload and download) and as plain files in the
bucket's folder (what a job's volume mounts). hf_xet turns one into the other: a file a client
uploaded is reconstructed into the folder, and a file a job wrote into a read-write volume is
uploaded so the bucket can list and serve it. Both calls block: run them in a worker thread, never on
the event loop that serves the CAS they talk to.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

_session: Any = None
_lock = threading.Lock()


class XetUnavailable(RuntimeError):
    """hf_xet is not installed (huggingface_hub installs it on x86_64 and arm64 only)."""


def _xet_session() -> Any:
    global _session
    with _lock:
        if _session is None:
            try:
                from hf_xet import XetSession
            except ImportError as exc:
                raise XetUnavailable(
                    "buckets need hf_xet (pip install hf_xet), which this machine does not have"
                ) from exc
            _session = XetSession()
        return _session


def upload_file(cas_url: str, token: tuple[str, int], path: Path) -> tuple[str, int]:
    """Upload a local file to the CAS; its (Xet hash, size)."""
    from hf_xet import SKIP_SHA256

    session = _xet_session()
    with session.new_upload_commit(endpoint=cas_url, token=token[0], token_expiry_unix_secs=token[1]) as commit:
        handle = commit.start_upload_file(str(path), sha256=SKIP_SHA256)
    result = handle.result()
    return result.xet_info.hash, int(result.xet_info.file_size)


def download_file(cas_url: str, token: tuple[str, int], file_hash: str, size: int, dest: Path) -> None:
    """Reconstruct a file of the CAS into `dest`."""
    from hf_xet import XetFileInfo

    session = _xet_session()
    with session.new_file_download_group(
        endpoint=cas_url, token=token[0], token_expiry_unix_secs=token[1]
    ) as group:
        group.start_download_file(XetFileInfo(file_hash, size), str(dest))
